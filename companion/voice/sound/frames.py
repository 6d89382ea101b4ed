"""The frame format every part of her hearing shares: 16 kHz mono float32 in 32 ms frames."""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16_000
FRAME_SAMPLES = 512
FRAME_S = FRAME_SAMPLES / SAMPLE_RATE
QUIET_RMS = 0.001
"""-60 dBFS: 20 dB under the quietest voice that counts as talking (the barge-in floor, 0.01).
A frame this quiet is silence to any VAD, and most of her day is listening to a quiet room."""

def rms(frame: np.ndarray) -> float:
    """Root-mean-square level of float samples in -1..1."""
    if frame.size == 0:
        return 0.0
    return float(np.sqrt(np.mean(np.square(frame, dtype=np.float64))))
