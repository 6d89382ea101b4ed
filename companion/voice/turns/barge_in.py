"""Barge-in: whether the user is talking over her, judged on the microphone while she speaks,
whether the utterance that ended is the one that stopped her, and whether what stopped her was
an interruption at all ("mm-hm", a cough: she goes on)."""

from __future__ import annotations

import re
import statistics
import time
from collections import deque
from collections.abc import Iterable

import numpy as np

from companion.voice.sound.audio import AudioSink
from companion.voice.sound.frames import FRAME_S, rms

BARGE_IN_LEAD_S = 0.5
"""Barge-in this long before an utterance's confirmed start still belongs to it."""
ONSET_GRACE_S = 0.75
"""Once something that was no interruption stopped her in a reply, her level alone does not stop
her for this long after each of its lines starts (or goes on): that is where an echo canceller
starved of time lets her voice through (beside two busy cores, "It was" and "I will" at each
sentence's onset), and a resume that starts there again would be stopped again by her own voice,
for ever. Words said over her still stop her once it is past."""
UNSETTLED_ECHO_RATIO = 0.3
"""The floor's share of her level while her echo canceller is still learning the room (its first
second of her voice, and after her speaker's stream moved): her echo may come back nearly as
loud as without one (EarSettings.echo_ratio). She is harder to stop for that second, and does
not stop herself."""
FALSE_STOP_S = 2.0
"""Stopped by a sound that no words follow within this long (and nothing is still being said
or heard): it was no interruption, and she goes on (LiveKit agents' false-interruption timeout)."""
BACKCHANNELS = frozenset({
    "uhm", "yeah", "yep", "yup", "ya", "right", "sure", "okay", "ok", "alright", "cool", "nice", "wow", "true",
    "exactly", "indeed", "i", "see", "got", "it", "gotcha", "interesting"})
"""Words that only say "I'm listening, go on" when said over her (with _HUM's noises). "Yes" and
"no" are not among them: over her they may be answers."""
BACKCHANNEL_WORDS = 3
"""Longer than this, it is more than a nod in words."""
_HUM = re.compile(r"[mh]*m[mh]*|(?:[aeou]+h+)+|h+[aeu]+h+|u+m+|e+r+m*")
"""A listening noise however Whisper spells it: "Mmmm", "M-M-M", "Hmm", "Uh-uh", "Huh", "Erm"."""
_NOT_SPEECH = re.compile(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*")
"""Whisper's notes for sounds that are no words: "[coughs]", "(clears throat)", "*cough*"."""


def only_backchannel(text: str) -> bool:
    """`text`, heard over her, asks nothing of her: no words (a cough, a breath, Whisper's
    "[coughing]"), or a short run of listening noises ("Mm-hmm.", "Yeah, yeah.", "Oh, I see")."""
    said = re.sub(r"[^a-z ]+", "", _NOT_SPEECH.sub(" ", text.lower()).replace("-", "")).split()
    return len(said) <= BACKCHANNEL_WORDS and all(word in BACKCHANNELS or _HUM.fullmatch(word) for word in said)


def has_words(text: str) -> bool:
    """`text` holds a word, not only Whisper's notes for sounds ("[coughs]") or nothing."""
    return re.search(r"[a-z]", _NOT_SPEECH.sub(" ", text.lower())) is not None


def talks_over_her(recent: Iterable[tuple[bool, float]], needed: int, floor: float) -> bool:
    """The user talks over her: of the recent frames, given as (sounds like speech, level),
    at least `needed` sound like speech (not all in a row: the gaps between words don't reset
    it), and the median level of those is above the floor. The level is judged over the word,
    not per frame: behind an echo canceller talked over at her own loudness, one 32 ms frame
    of "Please" came out at 0.008 with the floor at 0.016, and she stopped only when the whole
    sentence had ended, 2.5 s later (2 rounds in 20)."""
    levels = [level for speech, level in recent if speech]
    return len(levels) >= needed and statistics.median(levels) >= floor


def frames_in(ms: float) -> int:
    return max(1, round(ms / 1000 / FRAME_S))


class BargeInWatch:
    """Fed every frame heard while she speaks; `fired_at_s` keeps the stream time barge-in
    last fired (on the endpointer's clock), so the utterance around it is known to have stopped her."""

    def __init__(self, sink: AudioSink | None = None) -> None:
        self.fired_at_s: float | None = None
        self._recent: deque[tuple[bool, float]] = deque(maxlen=frames_in(400))
        """The last 400 ms of frames while she speaks: (sounds like speech, level)."""
        # Her level over the last ~500 ms of 20 ms blocks: her echo reaches the ear up to ~300 ms
        # after a block is handed to the speaker (its buffer, the room, the microphone's buffer,
        # the canceller waiting for the far end), so a line's last words still raise the floor.
        self._out_levels: deque[float] = deque(maxlen=25)
        self._wary = False
        """Stopped by no interruption during this reply: each line's onset is deaf to the level."""
        self._deaf_until = 0.0
        """time.monotonic() before which audio captured is no barge-in (ONSET_GRACE_S)."""
        self._echo_settled = getattr(sink, "echo_settled", None)
        if sink is not None:
            sink.add_level_listener(self._out_levels.append)
            sink.add_start_listener(self._line_started)

    def _line_started(self, when: float) -> None:
        if self._wary:
            self._deaf_until = when + ONSET_GRACE_S

    def went_on(self) -> None:
        """What stopped her was no interruption: until she is quiet, the start of each line she
        says (the rest of this one first) is not judged by its level."""
        self._wary = True

    def floor(self, barge_in_floor: float, echo_ratio: float) -> float:
        """The level the user must reach: the fixed floor, raised with her own playback level (more
        while her echo canceller is still learning: UNSETTLED_ECHO_RATIO)."""
        if self._echo_settled is not None and not self._echo_settled():
            echo_ratio = max(echo_ratio, UNSETTLED_ECHO_RATIO)
        return max(barge_in_floor, echo_ratio * max(self._out_levels, default=0.0))

    def hear(self, frame: np.ndarray, speech: bool, floor: float, needed_ms: int, stream_s: float,
             captured_at: float | None = None) -> bool:
        """One frame heard while she speaks (captured at `captured_at`, time.monotonic(); now
        when not given); True when it makes the user talk over her."""
        if (captured_at if captured_at is not None else time.monotonic()) < self._deaf_until:
            self._recent.clear()
            return False
        self._recent.append((speech, rms(frame)))
        if not talks_over_her(self._recent, frames_in(needed_ms), floor):
            return False
        self._recent.clear()
        self.fired_at_s = stream_s
        return True

    def she_is_quiet(self) -> None:
        """Talk while she was quiet is no talking over her next line; her next reply starts
        trusting the level again."""
        self._recent.clear()
        self._wary = False

    def stopped_her(self, speech_start_s: float, speech_end_s: float) -> bool:
        """Barge-in fired during the utterance from `speech_start_s` to `speech_end_s` (the VAD
        confirms speech a few frames after barge-in may already have fired on it)."""
        return self.fired_at_s is not None and \
            speech_start_s - BARGE_IN_LEAD_S <= self.fired_at_s <= speech_end_s

    def forget(self) -> None:
        """The endpointer's clock restarted: a barge-in time on the old clock means nothing."""
        self.fired_at_s = None
