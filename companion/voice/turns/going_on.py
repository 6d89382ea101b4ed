"""Words that go on after a turn ended in a pause ("No, | thank you."): the ear remembers the
latest utterance it handed on as words, and speech that starts right after it is heard joined
with it, from the first word. Whisper alone writes nothing, or the phantom "Thank you.", for
the second half of a sentence cut at a thinking pause."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from companion.voice.sound.frames import SAMPLE_RATE

__all__ = ["GOES_ON_S", "GoingOn"]

GOES_ON_S = 1.0
"""Speech that starts this soon after the end of an utterance she took as a turn goes on with
it (a thinking pause on the pause set lasts 0.4-1.5 s; her reply starts ~0.3-0.5 s after the
turn ends)."""


@dataclass(frozen=True)
class _Heard:
    audio: np.ndarray
    start_s: float
    end_s: float
    text: str = ""


class GoingOn:
    """The latest utterance heard as words, in the endpointer's stream seconds."""

    def __init__(self, *, max_utterance_s: float, within_s: float = GOES_ON_S) -> None:
        self.within_s = within_s
        self.max_samples = round(max_utterance_s * SAMPLE_RATE)
        """A joined utterance is never longer than the endpointer lets one be: a chain of
        short pauses would otherwise grow one without bound, each part transcribed again."""
        self._last: _Heard | None = None

    def remember(self, audio: np.ndarray, start_s: float, end_s: float, text: str = "") -> None:
        self._last = _Heard(audio, start_s, end_s, text)

    @property
    def text(self) -> str:
        """What the remembered utterance was heard as ("" when nothing is remembered)."""
        return self._last.text if self._last is not None else ""

    def forget(self) -> None:
        """Nothing to go on with: the stream's clock starts again (the times remembered mean
        nothing on the new one), or the words remembered were not taken as a turn."""
        self._last = None

    def joined(self, audio: np.ndarray, start_s: float) -> tuple[np.ndarray, float] | None:
        """(the remembered utterance's audio followed by `audio`, where it began) when `audio`,
        starting at stream time `start_s`, goes on with it; None when it stands alone."""
        last = self._last
        if last is None or not 0.0 <= start_s - last.end_s <= self.within_s:
            return None
        if len(last.audio) + len(audio) > self.max_samples:
            return None  # heard alone rather than from the middle of a long monologue
        return np.concatenate([last.audio, audio]), last.start_s
