"""Listening to a silent room is cheap: frames far below any noise floor skip the VAD model."""

from __future__ import annotations

import numpy as np

from companion.voice.vad import FRAME_SAMPLES, SileroVad


class _CountingDetector:
    """Stands in for pysilero's detector: counts the frames it is asked about."""

    def __init__(self, real) -> None:
        self.real = real
        self.frames = 0

    def process_samples(self, samples) -> float:
        self.frames += 1
        return self.real.process_samples(samples)

    def reset(self) -> None:
        self.real.reset()


def test_silent_frames_skip_the_model_and_speech_still_reaches_it():
    vad = SileroVad()
    counting = _CountingDetector(vad._detector)
    vad._detector = counting
    silence = np.zeros(FRAME_SAMPLES, dtype=np.float32)
    hiss = (np.random.default_rng(1).standard_normal(FRAME_SAMPLES) * 0.0003).astype(np.float32)  # -70 dBFS
    assert [vad.probability(frame) for frame in (silence, hiss, silence)] == [0.0, 0.0, 0.0]
    assert counting.frames == 0
    t = np.arange(FRAME_SAMPLES) / 16_000
    voiced = (0.2 * np.sin(2 * np.pi * 180 * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32)
    vad.probability(voiced)
    room = (np.random.default_rng(2).standard_normal(FRAME_SAMPLES) * 0.01).astype(np.float32)  # -40 dBFS
    vad.probability(room)
    assert counting.frames == 2  # anything a microphone really picks up is still judged by the model
