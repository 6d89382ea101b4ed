"""The one state machine for her face and the pill: listening, thinking, working, speaking,
waiting for approval, offline, idle. It is the only writer of StateChanged.

It reads the events that say what is going on (a turn began or ended, a tool runs, a card
waits, her voice plays, her ears are open, her brain could not be reached) and derives one
state from all of them, so no two writers ever disagree about her face.
"""

from __future__ import annotations

from companion.events import (
    ApprovalNeeded,
    ApprovalResolved,
    ErrorOccurred,
    Event,
    EventBus,
    ListeningChanged,
    SpeakingChanged,
    State,
    StateChanged,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnInterrupted,
    TurnSource,
    TurnStarted,
)

__all__ = ["OFFLINE_CODES", "FaceState"]

OFFLINE_CODES = frozenset({"unreachable", "timeout", "wrong_url", "auth", "unknown_model", "garbled"})
"""Brain errors that mean she has no brain to think with until something changes."""


class FaceState:
    """Subscribe-and-forget: `FaceState(bus)`; `state` is the current one."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.state = State.IDLE
        self._turn = 0
        self._thinking = False
        self._tools: set[str] = set()
        self._waiting: set[str] = set()
        self._playing = False
        self._queued = False
        self._spoke = False
        """Her voice played in this turn: between its sentences she is still speaking."""
        self._telling = False
        """The turn is hers (a reminder, a job's result): its words on the way are no thought."""
        self._listening = False
        self._offline = False
        self._failed_this_turn = False
        self._unsubscribe = bus.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        match event:
            case TurnStarted(turn=turn, source=source):
                self._turn = turn
                # Her own announcements (a reminder, a result) have nothing to think about.
                self._thinking = source in (TurnSource.SPOKEN, TurnSource.TYPED)
                self._telling = not self._thinking
                self._tools.clear()
                self._spoke = False
                self._failed_this_turn = False
            case TurnInterrupted(turn=turn) if turn == self._turn:
                self._thinking = False
                self._tools.clear()
            case TurnFinished(turn=turn, interrupted=interrupted) if turn == self._turn:
                self._thinking = False
                self._tools.clear()
                if not interrupted and not self._failed_this_turn:
                    self._offline = False  # she reached her brain
            case ToolStarted(call_id=call_id, turn=turn) if turn == self._turn:
                self._tools.add(call_id)
            case ToolFinished(call_id=call_id):
                self._tools.discard(call_id)
            case ApprovalNeeded(request_id=request_id):
                self._waiting.add(request_id)
            case ApprovalResolved(request_id=request_id):
                self._waiting.discard(request_id)
            case SpeakingChanged(speaking=playing, queued=queued):
                self._playing, self._queued = playing, queued
                self._spoke = self._spoke or playing
            case ListeningChanged(listening=listening):
                self._listening = listening
            case ErrorOccurred(stage="brain", code=code) if code in OFFLINE_CODES:
                self._offline = True
                self._failed_this_turn = True
            case _:
                return
        self._settle()

    def derive(self) -> State:
        if self._waiting:
            return State.WAITING
        if self._tools and self._thinking:
            return State.WORKING
        if self._playing or (self._queued and (self._spoke or self._telling)):
            return State.SPEAKING
        if self._thinking or self._queued:
            return State.THINKING  # words on the way
        if self._offline:
            return State.OFFLINE
        return State.LISTENING if self._listening else State.IDLE

    def _settle(self) -> None:
        state = self.derive()
        if state != self.state:
            self.state = state
            self.bus.emit(StateChanged(state))

    def close(self) -> None:
        self._unsubscribe()
