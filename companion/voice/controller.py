"""One owner for a front-end's voice session: starts, restarts (serialised) and closes it.

Restarts never overlap: the old session is closed before a new one opens, and requests that
arrive while one is in progress collapse into one (the newest settings win), so two quick
Saves in Settings leave exactly one microphone reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from companion.config import VoiceSettings

log = logging.getLogger(__name__)


class Closable(Protocol):
    async def close(self) -> None: ...


S = TypeVar("S", bound=Closable)


class VoiceController(Generic[S]):
    """`open(voice)` builds and starts a session (raising on failure); `failed(exc)` hears why
    one did not start. `session` is the running one, or None."""

    def __init__(self, open: Callable[[VoiceSettings], Awaitable[S]], *,
                 failed: Callable[[BaseException], None] | None = None) -> None:
        self._open = open
        self._failed = failed
        self.session: S | None = None
        self._wanted: VoiceSettings | None = None
        self._worker: asyncio.Task[None] | None = None
        self.settled = asyncio.Event()
        """Set while no start or restart is in progress (the session is up, or failed with a notice)."""
        self.settled.set()
        self.opened = 0
        """How many sessions were opened (each one closed before the next)."""

    def start(self, voice: VoiceSettings) -> asyncio.Task[None]:
        """Open a session with `voice`, replacing the running one; returns the worker to await."""
        self._wanted = voice
        self.settled.clear()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._work())
        return self._worker

    restart = start

    async def _work(self) -> None:
        try:
            while self._wanted is not None:
                voice, self._wanted = self._wanted, None
                old, self.session = self.session, None
                if old is not None:
                    await _close_quietly(old)
                if self._wanted is not None:
                    continue  # superseded while the old one closed: open only the newest
                try:
                    self.session = await self._open(voice)
                    self.opened += 1
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.info("her voice did not start: %s", exc)
                    if self._failed is not None:
                        self._failed(exc)
        finally:
            self.settled.set()

    async def close(self) -> None:
        """Stop any restart in progress and close the session (for good: start() is not called again)."""
        self._wanted = None
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        if self.session is not None:
            # Closed, but kept readable: what it heard and said can still be looked at.
            await _close_quietly(self.session)
        self.settled.set()


async def _close_quietly(session: Closable) -> None:
    try:
        await session.close()
    except Exception:
        log.exception("closing her voice failed")
