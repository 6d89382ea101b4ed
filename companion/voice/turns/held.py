"""Sounds held back instead of dropped: a person who begins while she answers, or a word too
short for Whisper alone, is heard with what follows.

Two kinds of utterance never reach the brain by themselves: one that sounded only over her
voice, below the barge-in level, and ended while she still spoke (it may be her echo's
leftover, and must neither start a turn nor cut her off), and one Whisper heard as nothing (a
0.5 s "Thanks." or "too cruel" alone). Dropping them lost a real person's words: Michael,
going on while she answered ("Uh, so this is the sick corpus…"), and a reader's last words of
a line. The ear now holds the latest such sound, and the next utterance that starts within
HELD_S of its end is heard with it in front, from its first syllable; her own words are never
put in front (`WordsHearer` asks whether the held words are hers first). A sound Whisper heard
nothing in waits longer, HELD_QUIET_S, when she said nothing from its start to the next
utterance's: a reader pauses 1.8 s after a sonnet's number ("One. | From fairest creatures"),
and with no line of hers anywhere near, the sound cannot be her echo's leftover.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["HELD_QUIET_S", "HELD_S", "Held", "HeldSound"]

log = logging.getLogger(__name__)

HELD_S = 1.0
"""An utterance that starts this soon after a held sound ends is heard with it (a thinking pause
inside a sentence lasts 0.4-1.5 s; the same window joins words going on after a turn)."""
HELD_QUIET_S = 2.5
"""The same for a sound Whisper heard no words in, when no line of hers played from its start to
the next utterance's start: a person's pause after a title or a number runs 1-2 s (the sonnet's
reader, 1.8 s), and her echo's leftovers, which the shorter window keeps out, cannot be there."""


@dataclass(frozen=True)
class HeldSound:
    """A sound held back, in the endpointer's stream seconds."""

    audio: np.ndarray
    start_s: float
    end_s: float
    spoke_from: float
    """time.monotonic() when it began (where her echo in it is looked for)."""
    text: asyncio.Task[str] | None
    """Its own transcript under way or done (None: not known; only asked for when needed)."""
    over_her: bool
    """It sounded only over her voice (her echo is possible); False: Whisper heard nothing in it."""


class Held:
    """The latest sound held back; `take` hands it to an utterance that follows it closely."""

    def __init__(self, *, max_utterance_s: float, within_s: float = HELD_S, quiet_within_s: float = HELD_QUIET_S,
                 rate: int = 16_000) -> None:
        self.within_s = within_s
        self.quiet_within_s = quiet_within_s
        """The window of a sound heard as no words, with her quiet from its start to what follows."""
        self.max_samples = round(max_utterance_s * rate)
        """Held audio and the utterance after it are never longer than one utterance may be."""
        self._sound: HeldSound | None = None

    def hold(self, sound: HeldSound) -> None:
        """Keep `sound`; one held just before it (within HELD_S) stays in front of it."""
        before = self.take(sound.audio, sound.start_s)
        if before is not None:
            for text in (before.text, sound.text):
                if text is not None:
                    text.cancel()  # of a part: the whole is heard when asked
            sound = HeldSound(np.concatenate([before.audio, sound.audio]), before.start_s, sound.end_s,
                              before.spoke_from, None, before.over_her or sound.over_her)
        self._sound = sound

    def take(self, audio: np.ndarray, start_s: float,
             she_was_quiet: Callable[[HeldSound], bool] = lambda _sound: False) -> HeldSound | None:
        """The held sound when an utterance (`audio`, starting at stream time `start_s`) begins
        within HELD_S of its end, or within HELD_QUIET_S of a sound heard as no words when
        `she_was_quiet` from its start to `start_s`; None otherwise. Either way nothing stays held."""
        sound, self._sound = self._sound, None
        if sound is None:
            return None
        gap_s = start_s - sound.end_s
        within_s = self.within_s
        if gap_s > within_s and not sound.over_her and she_was_quiet(sound):
            within_s = self.quiet_within_s
        if not 0.0 <= gap_s <= within_s or len(sound.audio) + len(audio) > self.max_samples:
            log.debug("a held sound (%.2f-%.2f s) is not taken by an utterance starting at %.2f s", sound.start_s,
                      sound.end_s, start_s)
            if sound.text is not None:
                sound.text.cancel()
            return None
        return sound

    def expired(self, until_s: float) -> HeldSound | None:
        """The held sound when no utterance can take it any more (stream time `until_s` is more
        than its window past its end: `within_s`, or `quiet_within_s` for one heard as no
        words); it is no longer held. None otherwise."""
        sound = self._sound
        if sound is None or until_s - sound.end_s <= (self.within_s if sound.over_her else self.quiet_within_s):
            return None
        self._sound = None
        return sound

    def forget(self) -> None:
        """The stream's clock starts again, or she was addressed otherwise: nothing is held."""
        sound, self._sound = self._sound, None
        if sound is not None and sound.text is not None:
            sound.text.cancel()
