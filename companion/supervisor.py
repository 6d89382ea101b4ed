"""Long-lived tasks under watch: a failure becomes an ErrorOccurred event with a sentence
(the window shows it as a banner), and the task restarts when that makes sense.

Nothing she runs in the background may die silently: the voice loop (restarted after a
hearing or device failure), the reminder scheduler (restarted after an OSError), a
background job and a model download (reported, not restarted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from companion.errors import CompanionError
from companion.events import ErrorOccurred, EventBus

__all__ = ["Supervisor", "Watch"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Watch:
    """How one task is watched."""

    name: str
    """What the user would call it ("my hearing", "reminders")."""
    stage: str
    """The ErrorOccurred stage (the window's banner key)."""
    restart_on: tuple[type[BaseException], ...] = ()
    """Failures after which it starts again (others end it, reported)."""
    max_restarts: int = 5
    """Give up after this many restarts in a row without a clean run."""
    backoff_s: float = 0.5
    """Wait before a restart, doubling each time (a failing device must not spin the CPU)."""


class Supervisor:
    """`spawn(watch, run)` runs `run()` as a task under `watch`; `close()` cancels them all."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self._tasks: set[asyncio.Task[None]] = set()
        self.failures: list[tuple[str, BaseException]] = []

    def spawn(self, watch: Watch, run: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(self._watched(watch, run))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _watched(self, watch: Watch, run: Callable[[], Awaitable[None]]) -> None:
        restarts = 0
        while True:
            try:
                await run()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.failures.append((watch.name, exc))
                again = isinstance(exc, watch.restart_on) and restarts < watch.max_restarts
                log.error("%s failed%s", watch.name, "; restarting" if again else "", exc_info=exc)
                self.bus.emit(ErrorOccurred(watch.stage, getattr(exc, "code", "task_failed"),
                                            _sentence(watch, exc, again)))
                if not again:
                    return
                await asyncio.sleep(watch.backoff_s * 2 ** restarts)
                restarts += 1

    async def close(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _sentence(watch: Watch, exc: BaseException, again: bool) -> str:
    what = exc.sentence if isinstance(exc, CompanionError) else f"{type(exc).__name__}: {exc}"
    tail = " I've started it again." if again else ""
    return f"Something went wrong with {watch.name} ({what}).{tail}"
