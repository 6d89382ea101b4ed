"""How high a voice is: the median fundamental frequency of its voiced 40 ms frames
(autocorrelation), enough to tell a woman's voice from a man's and a few semitones apart."""

from __future__ import annotations

import numpy as np


def median_pitch_hz(audio: np.ndarray, rate: int) -> float:
    """Median F0 over the frames that are loud and periodic (0.0 when none are)."""
    hop, window = int(0.01 * rate), int(0.04 * rate)
    lowest, highest = int(rate / 400), int(rate / 60)  # 60-400 Hz: every speaking voice
    found = []
    for start in range(0, audio.size - window, hop):
        frame = audio[start:start + window].astype(np.float64)
        frame -= frame.mean()
        if np.sqrt(np.mean(frame * frame)) < 0.02:
            continue
        corr = np.correlate(frame, frame, "full")[window - 1:]
        lag = lowest + int(np.argmax(corr[lowest:highest]))
        if corr[lag] > 0.5 * corr[0]:
            found.append(rate / lag)
    return float(np.median(found)) if found else 0.0


def word_error_rate(said: list[str], heard: list[str]) -> float:
    """Word-level edit distance over the words said."""
    row = list(range(len(heard) + 1))
    for i, word in enumerate(said, start=1):
        previous, row[0] = row[0], i
        for j, other in enumerate(heard, start=1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (word != other))
    return row[-1] / max(1, len(said))
