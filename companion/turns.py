"""Who owns the conversation right now: one current turn, and one way to end it early.

Every turn (spoken, typed, a reminder, a background result) gets an id when it begins; the
events that belong to it carry that id (the bus stamps them, see events.turn_scope). The
TurnOwner is the only one that decides which turn is current. An interruption is one
TurnInterrupted event: the runtime cancels that turn's model stream and tool on it, the
mouth drops its queued speech and playback on it, and anything that turn emits later is
ignored (it is no longer current).

Seam for a tentative turn (a reply prepared while the user pauses): begin it, and let the
mouth hold its speech until `confirm`; a `interrupt(reason="resumed")` throws it away.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

from companion.events import EventBus, TurnInterrupted, TurnSource, TurnStarted

__all__ = ["Turn", "TurnOwner"]

log = logging.getLogger(__name__)


@dataclass
class Turn:
    id: int
    source: TurnSource
    text: str = ""
    thinking: bool = True
    """Her model (or whatever produces the turn's words) is still at work."""
    speaking: bool = False
    """Her voice still has words of this turn queued or playing."""
    interrupted: bool = False

    @property
    def live(self) -> bool:
        return not self.interrupted and (self.thinking or self.speaking)


class TurnOwner:
    """Begins turns, ends them early, and says whether an event's turn is still current."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.current: Turn | None = None
        self._ids = itertools.count(1)

    def begin(self, source: TurnSource, text: str = "") -> Turn:
        """A new current turn. A turn still live (thinking or speaking) is interrupted first:
        new words win."""
        if self.current is not None and self.current.live:
            self.interrupt("a new turn")
        turn = Turn(next(self._ids), source, text)
        self.current = turn
        self.bus.emit(TurnStarted(turn.id, source, text))
        return turn

    def interrupt(self, reason: str) -> bool:
        """End the current turn now (Esc, barge-in, push-to-talk, "stop"). True when one was live."""
        turn = self.current
        if turn is None or not turn.live:
            return False
        turn.interrupted = True
        log.info("turn %d interrupted: %s", turn.id, reason)
        self.bus.emit(TurnInterrupted(turn.id, reason))
        return True

    def is_current(self, turn_id: int) -> bool:
        """Events of any other turn (finished and replaced, or interrupted) are late: ignore them."""
        turn = self.current
        return turn is not None and turn.id == turn_id and not turn.interrupted

    def thought(self, turn_id: int) -> None:
        """The turn's model part is over (its words may still be playing)."""
        if self.current is not None and self.current.id == turn_id:
            self.current.thinking = False

    def speaking(self, turn_id: int, speaking: bool) -> None:
        """The mouth reports whether it still has words of `turn_id` to say."""
        if self.current is not None and self.current.id == turn_id:
            self.current.speaking = speaking

    @property
    def live(self) -> bool:
        return self.current is not None and self.current.live
