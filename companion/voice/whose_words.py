"""Whose words count: of what the ear hears, which words are a turn for her, which answer the
approval card waiting, and which she leaves unanswered, saying why (VOICE_REASONS).

The voice loop (voice.loop) asks here and then acts on her turn: it stops, goes on or starts
one. The rules themselves live beside: who called her (the listening mode, her name, the wake
word, the follow-up window, Only me) in voice.addressing.calling, what a card takes as its
answer in the safety layer.
"""

from __future__ import annotations

import logging
from typing import Protocol

from companion.events import EventBus, Speak, SpeechKind, VoiceIgnored
from companion.safety.consent.answers import spoken_answer
from companion.voice.addressing.calling import Calling
from companion.voice.turns.utterance import Utterance

__all__ = ["CARD_WAITS", "STRANGER_ANSWER", "VOICE_REASONS", "CardPort", "WhoseWords"]

log = logging.getLogger(__name__)

CARD_WAITS = "The card is still waiting: say yes or no, or click it."
"""Said when she is called while a card waits and what she heard is no answer, unless the brain
port's card_waiting_line() says the newest card needs other words (a destructive command takes
no plain yes)."""

STRANGER_ANSWER = "I only take a spoken answer to that card from a voice I know. Click it or type your answer."
"""Said when a voice she doesn't know answers an approval card aloud (knowing voices on)."""

VOICE_REASONS = {
    "other-voice": "another voice inside the follow-up window: it needs its own call",
    "stop-ignored": "a voice I don't know talked over me: I go on",
    "card-stranger": "a spoken answer to the card in a voice I don't know: not taken",
    "not-you": "in Only me I answer only a voice I know: this one I don't",
}
"""Each decision a voice makes that leaves words unanswered, as her log and her face hear it
(events.VoiceIgnored)."""


class CardPort(Protocol):
    """What deciding whose words count needs from the brain (voice.loop.BrainPort has it)."""

    def answer_aloud(self, text: str) -> bool:
        """A spoken answer to an open approval request; True when `text` was one."""

    # Optional: card_open() -> bool (an approval card waits) and card_waiting_line() -> str.


class WhoseWords:
    """Judges each utterance the ear hands on; `calling` knows who called her."""

    def __init__(self, *, brain: CardPort, bus: EventBus, calling: Calling) -> None:
        self.brain = brain
        self.bus = bus
        self.calling = calling
        self._answer_open = False
        """A turn started and she has not been quiet since: the follow-up window is still to open."""

    def card_open(self) -> bool:
        """An approval card waits for an answer (the brain says; False when it can't)."""
        card_open = getattr(self.brain, "card_open", None)
        return bool(card_open()) if card_open is not None else False

    async def wants_words(self, start_s: float, end_s: float) -> bool:
        """Transcribe this utterance? Always while a card waits (it may be the answer)."""
        return self.card_open() or await self.calling.wants_words(start_s, end_s)

    def early_words(self, start_s: float, end_s: float) -> bool:
        """wants_words without waiting (for the early transcript at a pause)."""
        return self.card_open() or self.calling.policy.needs_words(start_s, end_s)

    async def question(self, utterance: Utterance) -> str | None:
        """The words as a question for her (the call taken off), or None when they were not
        said to her; a voice left unanswered for itself is told to her log and face."""
        verdict = await self.calling.judge(utterance.text, utterance.start_s, utterance.end_s,
                                           stopped_her=utterance.stopped_her)
        if verdict.turn:
            return verdict.question(utterance.text)
        if verdict.reason in ("other-voice", "not-you"):
            self.ignored("stop-ignored" if utterance.stopped_her else verdict.reason)
        return None

    async def to_the_card(self, utterance: Utterance) -> None:
        """While a card waits, in every listening mode: a yes or no, with or without her name in
        front ("Mira, yes, run it"), answers it under the card's own consent rules (the safety
        layer reads it); anything else starts no turn, so the card stays open."""
        answer = self.calling.without_call(utterance.text)
        if spoken_answer(answer) is not None and not await self._known_voice_answers(utterance):
            return
        if self.brain.answer_aloud(answer):
            return
        verdict = await self.calling.judge(utterance.text, utterance.start_s, utterance.end_s,
                                           stopped_her=utterance.stopped_her)
        if verdict.turn:
            log.info("called while a card waits, with no answer: the card stays open")
            line = getattr(self.brain, "card_waiting_line", lambda: CARD_WAITS)()
            self.bus.emit(Speak(SpeechKind.SAY, line))

    async def _known_voice_answers(self, utterance: Utterance) -> bool:
        """A spoken answer to a card counts only in a voice she knows, once one is known
        (knowing voices on and a print she is sure of); otherwise she says why it didn't count."""
        voices = self.calling.voices
        match = await voices.known(utterance.start_s, utterance.end_s) if voices is not None else None
        if match is None or match.name is not None:
            return True
        log.info("voice: a spoken answer to the card in a voice I don't know (%.2f): not taken", match.score)
        self.ignored("card-stranger")
        self.bus.emit(Speak(SpeechKind.SAY, STRANGER_ANSWER))
        return False

    def ignored(self, reason: str) -> None:
        """Words left unanswered for their voice: the reason in her log and on her face."""
        sentence = VOICE_REASONS[reason]
        log.info("voice: %s", sentence)
        self.bus.emit(VoiceIgnored(reason, sentence))

    def answering(self) -> None:
        """A turn for her starts: the follow-up window waits for her to be quiet again."""
        self._answer_open = True
        self.calling.answering()

    def quiet(self) -> None:
        """Nobody speaks and no turn runs: after an answer, the follow-up window starts now."""
        if self._answer_open:
            self._answer_open = False
            self.calling.answered()  # the follow-up window starts at her last word
