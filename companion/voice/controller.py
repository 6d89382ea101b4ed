"""One owner for a front-end's voice session: starts, restarts (serialised) and closes it.

Restarts never overlap: the old session is closed before a new one opens, and requests that
arrive while one is in progress collapse into one (the newest settings win), so two quick
Saves in Settings leave exactly one microphone reader.

A restart is one step that completes or rolls back: it runs in the controller's own task (a
turn's cancellation never reaches it), the new session must pass its self-test (her ear hears
a known word, her mouth says one), and when it can't start or fails the test she goes back to
the settings that worked, saying why, rather than staying deaf and mute.
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


SELF_TEST = "self_test"
"""A session may have `async self_test()`: run after a switch, it raises when her ear or mouth fails."""


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
        self.voice: VoiceSettings | None = None
        """The settings of the running session (after a roll-back, the ones that worked)."""
        self.rolled_back = 0
        """How many restarts failed and went back to the settings before."""

    def start(self, voice: VoiceSettings) -> asyncio.Future[None]:
        """Open a session with `voice`, replacing the running one; returns the work to await,
        shielded: a caller cancelled while it waits (its turn, its task) leaves the switch going."""
        self._wanted = voice
        self.settled.clear()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._work())
        return asyncio.shield(self._worker)

    restart = start

    async def _work(self) -> None:
        try:
            while self._wanted is not None:
                voice, self._wanted = self._wanted, None
                old, self.session = self.session, None
                worked = self.voice if old is not None else None
                if old is not None:
                    await _close_quietly(old)
                if self._wanted is not None:
                    continue  # superseded while the old one closed: open only the newest
                try:
                    self.session = await self._open_tested(voice, test=worked is not None)
                    self.voice = voice
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.info("her voice did not start: %s", exc)
                    if self._failed is not None:
                        self._failed(exc)
                    if worked is not None and worked != voice and self._wanted is None:
                        await self._roll_back(worked, exc)
        finally:
            self.settled.set()

    async def _open_tested(self, voice: VoiceSettings, *, test: bool) -> S:
        """A session on `voice`; `test`: it must pass its self-test too (closed when it fails)."""
        session = await self._open(voice)
        self.opened += 1
        self_test = getattr(session, SELF_TEST, None) if test else None
        if self_test is not None:
            try:
                await self_test()
            except BaseException:
                await _close_quietly(session)
                raise
        return session

    async def _roll_back(self, voice: VoiceSettings, why: BaseException) -> None:
        """The new settings failed: her voice on the ones that worked, with a notice saying so."""
        try:
            self.session = await self._open_tested(voice, test=True)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("her voice did not start on the settings before either", exc_info=True)
            return
        self.voice = voice
        self.rolled_back += 1
        sentence = getattr(why, "sentence", None) or str(why)
        notices = getattr(self.session, "notices", None)
        if isinstance(notices, list):
            notices.append(f"My new voice settings didn't work ({sentence.rstrip('.')}), so I went back to "
                           "the ones before.")
        log.warning("her new voice settings failed (%s); back on the ones before", sentence)

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
