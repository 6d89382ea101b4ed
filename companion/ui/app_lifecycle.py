"""The app's start and end: the core imported off the Qt thread, the window painted first, the
background work that ends with her.

CompanionApp wires these (app.py); they are apart because starting and ending the process is a
job of its own: the import race (companion.ui.imports), her face from the first frame, and no
task left half-way through a closed loop.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from pathlib import Path

from companion.events import ErrorOccurred, EventBus
from companion.logs import details_hint
from companion.ui.imports import import_alone

__all__ = ["NOT_STARTED", "BackgroundTasks", "face_in", "first_frame", "load_core"]

log = logging.getLogger(__name__)

NOT_STARTED = "I couldn't start, so this waits here: I'll answer it once Try again on the banner works."


async def load_core():
    """Import the core as the window does: on the import thread, no other thread importing
    meanwhile (companion.ui.imports says why); companion.runtime."""
    return await import_alone(_import_core)


def face_in(path: Path) -> str:
    """The `face:` a personality file's front matter names ("" when none can be read)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    if not lines or lines[0].strip() != "---":
        return ""
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, _colon, value = line.partition(":")
        if key.strip() == "face":
            return value.strip().strip("\"'")
    return ""


def _import_core():
    """Import the core and its tool modules (worker thread: ~0.7 s of imports off the Qt thread)."""
    runtime = importlib.import_module("companion.runtime")
    from companion.tools import registry

    registry.builtin_modules()
    registry.action_modules()
    for name in ("companion.safety.gate", "companion.safety.consent.approval", "companion.reminders"):
        importlib.import_module(name)  # imported lazily by Companion.start(), on the Qt thread
    return runtime


async def first_frame(window, times: dict[str, float]) -> None:
    """Let `window` paint once before the core's start-up work begins; the moment goes in `times`."""
    if not window.isVisible():
        return
    painted = asyncio.get_running_loop().create_future()

    def done(_time: float) -> None:
        if not painted.done():
            painted.set_result(None)

    window.face.painted.connect(done)
    try:
        await asyncio.wait_for(painted, 1.0)
    except TimeoutError:
        log.debug("no frame painted within a second; starting anyway")
    finally:
        window.face.painted.disconnect(done)
    times["first_frame"] = time.perf_counter()


class BackgroundTasks:
    """The app's background work (the start, a probe, a download): a failure shows in the window,
    and whatever still runs ends with her."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.running: set[asyncio.Task] = set()

    def spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self.running.add(task)
        task.add_done_callback(self._done)
        return task

    async def end(self) -> None:
        """Background work still running (a start-up probe, a model download) ends with her, on
        her loop, not half-way through a closed one; work that ending starts ends too."""
        while pending := [task for task in self.running if task is not asyncio.current_task() and not task.done()]:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    def _done(self, task: asyncio.Task) -> None:
        self.running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            log.error("background task failed", exc_info=error)
            # Never silent: the window shows it (a banner) like any other failure.
            self.bus.emit(ErrorOccurred("app", "task_failed", f"Something went wrong: {error}.{details_hint()}"))
