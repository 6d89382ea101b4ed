"""A still workspace from the card to the end of its run: nothing of hers writes meanwhile.

A card that starts a process shows what will run; the yes means that, so from the moment the
card opens until the approved run ends nothing of hers may change the workspace. `hold()` is
taken before the card's files are read: it waits for her writes in flight to finish (her file
tools write inside `writing()`, and so does the door while it starts a writable process), then
has every sandboxed process of hers that may write stopped by the kernel (SIGSTOP, `freeze`)
until the hold is released. Her writers that come meanwhile wait, up to their own budget, and
are then refused with `STILL_SENTENCE`. Processes started meanwhile that only read see the
workspace read-only anyway (the sandbox's mount). One hold at a time: a second card that
starts a process waits until the first one's run has ended, so each card's files are read
after the run before it.

Everything here runs on the event loop (the freezing itself in a worker thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["BUSY_SENTENCE", "STILL_SENTENCE", "UNHELD_SENTENCE", "Held", "Stilled", "StillWorkspace"]

STILL_SENTENCE = ("I'm keeping the workspace still while you decide on a command, and until it "
                  "has run, so I didn't {what}. Ask me again once that's done.")
"""What a writer of hers says when it waited for the stillness and it did not end in time."""

BUSY_SENTENCE = ("A command you approved is still running, and I ask about one command at a time "
                 "until it has ended, so I didn't ask about this one. Ask me again once it's done.")
"""What a card that could not wait its turn says (the workspace is held for the one before)."""

UNHELD_SENTENCE = ("I couldn't stop a command of mine that may change the workspace while you decide, "
                   "so I didn't ask about this one.")
"""What a card says when a writer of hers could not be stopped (it fails closed: nothing asked)."""

Freezer = Callable[[], Awaitable[Callable[[], Awaitable[None]]]]
"""Stops a running writer (the kernel keeps it stopped); returns what lets it go on."""


class Stilled(Exception):  # noqa: N818 (a state, said with a sentence)
    """A writer of hers gave up waiting for the workspace to be hers again."""

    def __init__(self, what: str, sentence: str = STILL_SENTENCE) -> None:
        super().__init__(sentence.format(what=what))
        self.sentence = str(self)


@dataclass(eq=False)
class Held:
    """One card's hold: from its opening to the end of its approved run (or its no)."""

    still: StillWorkspace
    since: float = field(default_factory=time.monotonic)
    released: bool = False

    async def release(self) -> None:
        """The card was declined, or its run ended: her writers may go on (idempotent)."""
        if not self.released:
            self.released = True
            await self.still._release(self)

    def release_soon(self) -> None:
        """`release` from code that can't await (a callback); scheduled on the running loop."""
        if not self.released:
            asyncio.ensure_future(self.release())

    @property
    def current(self) -> bool:
        return not self.released and self.still._holder is self


class StillWorkspace:
    """The lock her writers take, and the hold a card takes over them."""

    def __init__(self) -> None:
        self._holder: Held | None = None
        self._writing = 0
        self._running: dict[int, Freezer] = {}
        self._thaws: list[Callable[[], Awaitable[None]]] = []
        self._changed: asyncio.Condition | None = None
        self._next = 0

    @property
    def held(self) -> bool:
        """A card is open, or its approved run has not ended."""
        return self._holder is not None

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def hold(self, within_s: float | None = None) -> Held:
        """Take the workspace still for one card; waits for an earlier card's run to end (up to
        `within_s`, then raises Stilled with BUSY_SENTENCE)."""
        changed = self._condition()
        async with changed:
            try:
                await asyncio.wait_for(changed.wait_for(lambda: self._holder is None), within_s)
            except TimeoutError:
                raise Stilled("", BUSY_SENTENCE) from None
            held = Held(self)
            self._holder = held
            try:
                await changed.wait_for(lambda: self._writing == 0)
            except BaseException:
                self._holder = None
                changed.notify_all()
                raise
        try:
            # Writers already running are stopped where they are, not waited for.
            for freeze in list(self._running.values()):
                self._thaws.append(await freeze())
        except OSError:
            await held.release()
            raise Stilled("", UNHELD_SENTENCE) from None
        except BaseException:
            await held.release()
            raise
        return held

    async def _release(self, held: Held) -> None:
        if self._holder is not held:
            return
        thaws, self._thaws = self._thaws, []
        for thaw in thaws:
            with contextlib.suppress(OSError, ProcessLookupError):
                await thaw()
        changed = self._condition()
        async with changed:
            self._holder = None
            changed.notify_all()

    async def quiet(self, within_s: float) -> bool:
        """Wait up to `within_s` for no hold; True when the workspace is hers again."""
        changed = self._condition()
        async with changed:
            try:
                await asyncio.wait_for(changed.wait_for(lambda: self._holder is None), max(0.0, within_s))
            except TimeoutError:
                return False
        return True

    async def enter(self, what: str, *, within_s: float) -> None:
        """One write of hers begins (or a writable process starts): waits while a card holds the
        workspace, up to `within_s`, then raises Stilled with its sentence. Pair with `leave`."""
        changed = self._condition()
        async with changed:
            try:
                await asyncio.wait_for(changed.wait_for(lambda: self._holder is None), max(0.0, within_s))
            except TimeoutError:
                raise Stilled(what) from None
            self._writing += 1

    async def leave(self) -> None:
        """The write that `enter` let begin is done (or its process is registered as running)."""
        changed = self._condition()
        async with changed:
            self._writing -= 1
            changed.notify_all()

    @contextlib.asynccontextmanager
    async def writing(self, what: str, *, within_s: float) -> AsyncIterator[None]:
        """`enter` and `leave` around one write of hers."""
        await self.enter(what, within_s=within_s)
        try:
            yield
        finally:
            await self.leave()

    def running(self, freeze: Freezer) -> Callable[[], None]:
        """A writable process of hers is running: stopped by every hold from now on until it ends.
        Returns what to call when it has ended. Register it inside `writing()`, so no hold can
        begin between its start and its registration."""
        self._next += 1
        key = self._next
        self._running[key] = freeze
        return lambda: self._running.pop(key, None)  # type: ignore[func-returns-value]
