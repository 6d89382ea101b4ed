"""Her pitch, in semitones: the tape-speed trick, with the pace kept.

A voice asked to sound `semitones` higher is rendered that much slower by its engine (every
engine has a speed), then played back faster by resampling (soxr): pitch and pace both rise by
the same ratio, so the pace comes back to the one asked for and only the pitch stays raised
(within a few percent: an engine's pauses don't scale exactly with its speed; measured 0.90-1.08
of the pace at -4 to +4 semitones on piper's joe and hibari's heart).
Formants move with the pitch, which at a few semitones sounds like a smaller (or larger)
person: what Pip (higher) and Jeeves (lower) are meant to sound like.
"""

from __future__ import annotations

import numpy as np
import soxr


def ratio(semitones: float) -> float:
    """How many times higher the pitch is (12 semitones: twice)."""
    return float(2.0 ** (semitones / 12.0))


def render_speed(speed: float, semitones: float) -> float:
    """The speed to ask the engine for, so that `shift` brings the pace back to `speed`."""
    return speed / ratio(semitones)


def shift(audio: np.ndarray, semitones: float, sample_rate: int) -> np.ndarray:
    """`audio` rendered at `render_speed`, played `ratio` times faster: higher by `semitones`."""
    if not semitones or audio.size == 0:
        return audio
    # Read as if recorded at rate * ratio and converted to rate: 1/ratio as many samples.
    shifted = soxr.resample(audio.astype(np.float32, copy=False), sample_rate * ratio(semitones), sample_rate)
    return shifted.astype(np.float32, copy=False)
