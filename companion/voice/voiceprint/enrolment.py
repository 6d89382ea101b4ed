"""Learning a voice from the calls themselves, and saying when she is not sure of it yet.

The person who calls her is the one she learns: each call (her name, the wake word, push-to-talk
with words) and each follow-up in the caller's voice adds that utterance's embedding to the
print. She is sure of a print once it holds SURE_UTTERANCES utterances and SURE_SECONDS of
speech; until then nothing is refused because of it. An utterance unlike the print so far
(a guest calling her) is not learned: the first voice she learns is the one she keeps. With
several people enrolled by name (read aloud in Settings, voiceprint.reading), a call grows the
print of whoever it matches, and a voice matching none starts no print of its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from companion.voice.voiceprint.store import Voiceprint, VoiceprintStore

__all__ = ["SURE_SECONDS", "SURE_UTTERANCES", "Enrolment", "EnrolmentState"]

log = logging.getLogger(__name__)

SURE_UTTERANCES = 5
SURE_SECONDS = 12.0
LEARN_MIN_S = 1.0
"""Shorter utterances ("Mira?") say too little to learn from."""


@dataclass(frozen=True)
class EnrolmentState:
    name: str
    utterances: int
    seconds: float
    sure: bool

    def sentence(self) -> str:
        if self.utterances == 0:
            return "I haven't learned your voice yet: I learn it when you call me."
        if not self.sure:
            heard = (f"{self.utterances} of {SURE_UTTERANCES} times you called me" if self.utterances < SURE_UTTERANCES
                     else f"{self.seconds:.0f} of {SURE_SECONDS:.0f} seconds of your speech")
            return f"I'm still learning your voice ({heard}): until I'm sure, I don't go by it."
        return f"I know your voice ({self.utterances} utterances, {self.seconds:.0f} s)."


def is_sure(voiceprint: Voiceprint | None) -> bool:
    return (voiceprint is not None and len(voiceprint.segments) >= SURE_UTTERANCES
            and voiceprint.seconds >= SURE_SECONDS)


class Enrolment:
    """Adds utterances to the print called `name` in `store`; `threshold` is the cosine an
    utterance needs against the print so far to be learned."""

    def __init__(self, store: VoiceprintStore, threshold: float, name: str = "you") -> None:
        self.store = store
        self.threshold = threshold
        self.name = name

    def state(self) -> EnrolmentState:
        """The state of the voice learned from the calls (or, when that has none, the first print)."""
        prints = self.store.current()
        return self.state_of(self.name if self.name in prints or not prints else sorted(prints)[0])

    def state_of(self, name: str) -> EnrolmentState:
        voiceprint = self.store.get(name)
        if voiceprint is None:
            return EnrolmentState(name, 0, 0.0, False)
        return EnrolmentState(name, len(voiceprint.segments), voiceprint.seconds, is_sure(voiceprint))

    def learn(self, embedding: np.ndarray | None, seconds: float) -> bool:
        """Learn one utterance of the caller's; False when it was too short or unlike the print."""
        if embedding is None or seconds < LEARN_MIN_S:
            return False
        prints = self.store.current()
        scored = sorted(((float(p.centroid() @ embedding), p.name) for p in prints.values() if p.segments), reverse=True)
        if scored and scored[0][0] < self.threshold:
            log.info("voice: not learned (%.2f against %s's print): another voice called", *scored[0])
            return False
        name = scored[0][1] if scored else self.name
        was_sure = is_sure(prints.get(name))
        self.store.add(name, embedding, seconds)
        state = self.state_of(name)
        if state.sure and not was_sure:
            log.info("voice: %s", state.sentence())
        return True
