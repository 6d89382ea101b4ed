"""Her side of a prepared reply: while the user pauses, the reply to the early transcript is
requested and its first sentence synthesized, with her mouth held shut until the turn ends."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from companion.events import Event, ReplyDelta, ReplyDone
from companion.voice.speaking.sentences import SentenceSplitter
from companion.voice.speaking.speaker import Speaker
from companion.voice.turns.latency import TurnLatency

log = logging.getLogger(__name__)


@dataclass
class Preparation:
    """One prepared reply: for which pause and words, the brain's held turn, its own splitter,
    and the latency marks it collected before anyone knew it would be needed."""

    pause_id: int
    text: str
    turn: object = None
    """The brain's PreparedTurn (brain/prepared.py)."""
    splitter: SentenceSplitter = field(default_factory=SentenceSplitter)
    latency: TurnLatency = field(default_factory=TurnLatency)


class ReplyPreparer:
    """At most one preparation at a time. `brain` has prepare(text, front) -> PreparedTurn."""

    def __init__(self, brain, speaker: Speaker) -> None:
        self.brain = brain
        self.speaker = speaker
        self.current: Preparation | None = None
        """The preparation for the pause under way (her mouth is held)."""
        self.handed_over: Preparation | None = None
        """The preparation that became her turn, while its held events are delivered."""
        self.preparing = asyncio.Event()
        """Set while a preparation is under way."""
        self.started = 0
        self.discarded = 0
        """How many preparations were thrown away because the user went on talking."""
        self.filled = 0
        """Words so far sent ahead to fill the brain's prompt cache (heard_so_far)."""
        self._heard = ""

    @property
    def supported(self) -> bool:
        return callable(getattr(self.brain, "prepare", None))

    def start(self, pause_id: int, text: str) -> None:
        self.drop()
        preparation = Preparation(pause_id, text)
        preparation.latency.mark("transcribed")
        self.speaker.hold()
        self.current = preparation
        self.started += 1
        self.preparing.set()
        preparation.turn = self.brain.prepare(text, lambda event: self._front(preparation, event))
        log.debug("preparing a reply to %r during the pause", text)

    def heard_so_far(self, text: str) -> bool:
        """The user's words so far while they still talk (a partial transcript, or a pause's
        early one): the brain sends them ahead to fill its server's prompt cache, so the turn's
        end leaves only the last words to evaluate. Not while a reply is prepared (its own
        request holds them), nor for words already sent."""
        fill = getattr(self.brain, "fill", None)
        text = text.strip()
        if fill is None or self.current is not None or not text or text == self._heard:
            return False
        self._heard = text
        if not fill(text):
            return False
        self.filled += 1
        return True

    def _front(self, preparation: Preparation, event: Event) -> None:
        """The prepared turn's events as they stream: her mouth gets the words ready (held).
        A handed-over preparation still streams here until its turn begins: her mouth skips
        every event the front had, so words the front dropped then would never be said."""
        if preparation is not self.current and preparation is not self.handed_over:
            return
        if isinstance(event, ReplyDelta):
            preparation.latency.mark("first_token")
            for sentence in preparation.splitter.push(event.text):
                self.speaker.say(sentence, prepared=True)
        elif isinstance(event, ReplyDone):
            for sentence in preparation.splitter.flush():
                self.speaker.say(sentence, prepared=True)

    def shown(self, event: Event) -> bool:
        """True for an event her mouth already had from the preparation (not to be said twice)."""
        return any(p is not None and p.turn.hold.shown(event) for p in (self.current, self.handed_over))

    def take(self, pause_id: int | None) -> Preparation | None:
        """The preparation for `pause_id`, handed over (the turn is over); any other is dropped."""
        self._heard = ""  # the utterance is over: the next one's words are new, even the same ones
        preparation = self.current
        if preparation is None or preparation.pause_id != pause_id:
            self.drop()
            return None
        self.current, self.handed_over = None, preparation
        self.preparing.clear()
        return preparation

    def finish(self, preparation: Preparation) -> None:
        """The handed-over preparation ran as her turn (or was not wanted after all)."""
        if self.handed_over is preparation:
            self.handed_over = None

    def refuse(self, preparation: Preparation) -> None:
        """A handed-over preparation is not wanted after all (other words, an echo): forget it."""
        self.finish(preparation)
        self.discarded += 1
        preparation.turn.discard()
        self.speaker.drop_held()

    def drop(self) -> None:
        """The user went on (or something else came first): no trace of the preparation stays."""
        preparation, self.current = self.current, None
        self.preparing.clear()
        if preparation is None:
            return
        self.discarded += 1
        preparation.turn.discard()
        self.speaker.drop_held()  # the prepared lines go (not a notice said meanwhile); her mouth opens
        log.debug("dropped the reply prepared for %r", preparation.text)
