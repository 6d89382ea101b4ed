"""A reply prepared during the user's pause, held back until their turn is known to be over.

The brain request starts on the early transcript, and her mouth sees the reply as it streams
(so the first sentence can be synthesized), but nothing else happens before `confirm()`:
no event reaches anyone else (captions, the conversation store), no model reply is handed
back to the turn loop (so no tool runs, and nothing is written to the history), and a
brain failure waits too. `discard()` (the user went on talking) leaves no trace: the turn ran
on a scratch copy of the history that is thrown away with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from companion.brain.client import BrainError
from companion.brain.turn import Conversation, TurnResult
from companion.events import Event, EventBus, UserHeard
from companion.tools.context import Channel


class HeldBus:
    """Stands between a prepared turn and the real bus: each event goes to `front` at once
    and waits for everyone else; release() delivers what waited and lets the rest through."""

    def __init__(self, bus: EventBus, front: Callable[[Event], None]) -> None:
        self._bus = bus
        self._front = front
        self._held: list[Event] = []
        self._shown: dict[int, Event] = {}  # by id, holding a reference so no id is reused
        self.released = False
        self.discarded = False
        self.turn = 0
        """The turn id it became when confirmed (its events are stamped with it)."""
        self.replaying = False
        """True while release() delivers what waited (the front already had all of it)."""

    def _stamp(self, event: Event) -> Event:
        # The prepared turn's task began before it had a turn id: its events get it here.
        if self.turn and getattr(event, "turn", None) == 0:
            return dataclasses.replace(event, turn=self.turn)
        return event

    def emit(self, event: Event) -> None:
        if self.released:
            self._bus.emit(self._stamp(event))
        elif not self.discarded:
            self._held.append(event)
            self._shown[id(event)] = event
            self._front(event)

    def shown(self, event: Event) -> bool:
        """True when `front` already had this event (so it can ignore it when it is delivered)."""
        return self.replaying or self._shown.get(id(event)) is event

    def subscribe(self, subscriber: Callable[[Event], None]) -> Callable[[], None]:
        return self._bus.subscribe(subscriber)

    def release(self) -> None:
        self.released = True
        held, self._held = self._held, []
        self.replaying = True
        try:
            for event in held:
                self._bus.emit(self._stamp(event))
        finally:
            self.replaying = False

    def discard(self) -> None:
        self.discarded = True
        self._held.clear()
        self._shown.clear()


class HeldModel:
    """The chat model of a prepared turn: the reply streams as usual, but is handed back to
    the turn loop only once the turn is confirmed. The loop acts on a reply only after it comes
    back (tool calls, the history), so this one wait is what keeps a pause for breath from
    having side effects."""

    def __init__(self, model: Any, confirmed: asyncio.Event) -> None:
        self._model = model
        self._confirmed = confirmed
        self.replies = 0
        """Model replies received so far (the first one holds back a tool call, if any)."""
        self.holding = asyncio.Event()
        """Set once a reply has arrived and waits for the confirmation."""

    async def complete(self, messages, tools, on_text, **options):
        try:
            reply = await self._model.complete(messages, tools, on_text, **options)
        except BrainError:
            await self._confirmed.wait()  # even "I can't reach my brain" waits for the turn
            raise
        self.replies += 1
        self.holding.set()
        await self._confirmed.wait()
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


class PreparedTurn:
    """One prepared turn on `scratch` (a Conversation on a HeldBus with a copy of the history).

    Made by Companion.prepare(); Companion.ask_prepared() confirms it as her turn."""

    def __init__(self, scratch: Conversation, hold: HeldBus, text: str, channel: Channel) -> None:
        self.text = text
        self.hold = hold
        self.confirmed = asyncio.Event()
        self.model = HeldModel(scratch.model, self.confirmed)
        scratch.model = self.model
        scratch.remembered = None  # the store hears of it only once confirmed
        self.conversation = scratch
        hold.emit(UserHeard(text, spoken=channel == Channel.VOICE))
        self.task: asyncio.Task[TurnResult] = asyncio.ensure_future(scratch.run_turn(text, channel))

    @property
    def discarded(self) -> bool:
        return self.hold.discarded

    @property
    def waiting_at_tool_call(self) -> bool:
        """The brain asked for a tool, which waits for the confirmation."""
        return not self.confirmed.is_set() and self.model.replies > 0

    def confirm(self, history: list[dict[str, Any]], remembered) -> None:
        """The user's turn is over: from now on this turn writes to the real history (and store),
        its held events are delivered, and the model's reply goes on to the turn loop."""
        self.conversation.history = history
        self.conversation.remembered = remembered
        self.hold.release()
        self.confirmed.set()

    def discard(self) -> None:
        """The user went on talking: stop, and forget everything (events, scratch history)."""
        self.hold.discard()
        self.task.cancel()

    async def wait_discarded(self) -> None:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task
