"""Her one foreground turn: the task that runs it and its id. Interrupting the turn cancels its
task; what was heard of an interrupted reply is kept once the turn has unwound; and whatever
waits for a quiet moment is told when it ends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from companion.brain.turn import Conversation, TurnResult
from companion.events import Event, EventBus, TurnInterrupted
from companion.turns import TurnOwner


class ForegroundTurn:
    """`after` runs at the end of every turn (notices and reminders that waited); `heard(text)`
    trims her last reply to what was played of it."""

    def __init__(self, bus: EventBus, turns: TurnOwner, *, after: Callable[[], None],
                 heard: Callable[[str], None]) -> None:
        self.turns = turns
        self._after, self._keep = after, heard
        self.task: asyncio.Future[TurnResult] | None = None
        self.turn_id = 0
        """The turn id of `task` (her last foreground turn)."""
        self._heard: dict[int, str] = {}
        """What was played of an interrupted turn still unwinding (applied when it has)."""
        bus.subscribe(self._on_event)

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    async def settle(self) -> None:
        """Wait until a turn still running has unwound (an interrupted one finishes its cancellation)."""
        if self.running:
            await asyncio.gather(self.task, return_exceptions=True)

    async def own(self, turn: asyncio.Future[TurnResult], conversation: Conversation, turn_id: int) -> TurnResult:
        """Run `turn` as the current turn `turn_id`: interrupting it cancels it, notices wait
        for its end, and what was played of it is kept once it has unwound."""
        turn.add_done_callback(lambda _done: self._ended(turn_id))
        self.task, self.turn_id = turn, turn_id
        try:
            return await turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if turn.cancelled() and (current is None or not current.cancelling()):
                # The turn was interrupted; the caller was not cancelled.
                return TurnResult(conversation.partial, interrupted=True)
            raise
        finally:
            if self.task is turn:
                self.task = None
            self._after()

    def interrupt(self, reason: str) -> bool:
        """End the current turn now; True when a turn was live."""
        interrupted = self.turns.interrupt(reason)
        if self.running and not interrupted:
            self.task.cancel()  # a turn the owner already let go of (closing)
            return True
        return interrupted

    async def stop(self) -> None:
        """Stop a running turn and wait for it to unwind (it is saved as far as it got)."""
        if self.running:
            self.interrupt("stop")
            await asyncio.gather(self.task, return_exceptions=True)

    def keep_heard(self, turn_id: int, heard: str) -> None:
        """After an interruption: turn `turn_id`'s reply in the history becomes what was played."""
        if turn_id != self.turn_id:
            return  # a reminder or notice: remembered whole, or not a reply at all
        if self.running:
            self._heard[turn_id] = heard  # it writes its partial reply as it unwinds: trim after
        else:
            self._keep(heard)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, TurnInterrupted) and event.turn == self.turn_id and self.running:
            self.task.cancel()

    def _ended(self, turn_id: int) -> None:
        self.turns.thought(turn_id)
        heard = self._heard.pop(turn_id, None)
        if heard is not None:
            self._keep(heard)
