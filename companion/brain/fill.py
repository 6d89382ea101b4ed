"""Filling a local server's prompt cache while the user still speaks.

The words heard so far go ahead as the very request her turn would start with (the same
builder: system message, history with its notes, tools, this turn's note), capped at one
token, and nobody reads the answer: the server evaluates the prompt into its cache, so at the
real end of the turn only the last words remain to evaluate. llama.cpp samples that one token
from the prompt's own logits (its timings say predicted_ms 0.001), so the fill costs the
prompt's new tokens and nothing more; `max_tokens` 0 is no cheaper there, and Ollama reads
0 as "no limit".

A fill must never stand in the way of a real request: at most one is in flight per client
(newer words wait for it and go next, the newest only), none starts while a real request of
the same client is under way, and every real request hangs up on an unfinished fill first.
llama.cpp cannot stop a prompt batch it has begun (it finishes it, and the real request then
finds those tokens cached); a fill it has not begun is dropped when the client hangs up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from companion.brain.server import ServerInfo, ServerKind
from companion.config import BrainSettings

log = logging.getLogger(__name__)

HANG_UP_WAIT_S = 0.05
"""How long a real request waits for a cancelled fill to close its connection (it is local)."""


def fill_wanted(settings: BrainSettings, server: ServerInfo | None) -> bool:
    """Fills go only to a server on this machine or network (llama.cpp, Ollama, another local
    one), never to a hosted API: it bills every request, and its caching is its own."""
    return settings.fill_while_speaking and server is not None and server.kind != ServerKind.HOSTED


class FillLine:
    """One client's fills: `offer()` sends one (or queues the newest behind the one in flight),
    `real_request()` hangs up on it before a real request goes."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._next: tuple[str, Callable[[], Awaitable[object]]] | None = None
        self._last_key: str | None = None
        self.live = 0
        """Real requests of this client under way (no fill starts meanwhile)."""
        self.sent = 0
        self.hung_up = 0
        """Fills still unfinished when a real request came (the connection was closed)."""

    @property
    def in_flight(self) -> bool:
        return self._task is not None and not self._task.done()

    def offer(self, key: str, send: Callable[[], Awaitable[object]]) -> bool:
        """Send the request `send()` makes, unless the same one (`key`) went last, a real
        request is under way, or one is in flight (then it goes next, unless newer words do)."""
        if self.live or key == self._last_key:
            return False
        if self.in_flight:
            self._next = (key, send)
            return True
        self._start(key, send)
        return True

    def _start(self, key: str, send: Callable[[], Awaitable[object]]) -> None:
        self._last_key = key
        self.sent += 1
        self._task = asyncio.ensure_future(self._run(send))
        self._task.add_done_callback(self._done)

    async def _run(self, send: Callable[[], Awaitable[object]]) -> None:
        try:
            await send()
        except Exception as exc:  # the real turn says what is wrong with the brain, not a fill
            log.debug("prompt fill failed: %r", exc)

    def _done(self, _task: asyncio.Task[None]) -> None:
        queued, self._next = self._next, None
        if queued is not None and not self.live and queued[0] != self._last_key:
            self._start(*queued)

    async def real_request(self) -> None:
        """A real request is about to go: the words waiting are dropped and the fill in flight
        is hung up on (waited for only as long as closing a local connection takes)."""
        self._next = None
        task = self._task
        if task is None or task.done():
            return
        self.hung_up += 1
        task.cancel()
        await asyncio.wait({task}, timeout=HANG_UP_WAIT_S)
