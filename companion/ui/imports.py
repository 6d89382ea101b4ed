"""Heavy imports off the Qt thread, one load at a time, while no other thread imports.

PySide6's import hook (shibokensupport's `feature_imported`) reads the source of every module
an `import` returns, and while one thread is inside it, imports on every other thread pass
unread: the guard is process-wide. A module passed over is read later, the next time an import
returns it; for pydantic that can be in the middle of importing `pydantic._internal._validators`,
whose lazy `__getattr__` (asked for `__wrapped__` by `inspect.unwrap`) then re-enters the
half-imported module: "cannot import name 'import_string' from partially initialized module".
It struck about one start in twenty, when the global push-to-talk key imported python-xlib
while the core imported openai. So the window's heavy imports (the core, her voice, the
shortcut backends) run here, one after another, and every other thread's `import` waits
until they are done.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

WAIT_LIMIT_S = 60.0
"""A thread never waits longer than this for the imports to finish (should a module imported
here ever wait on another thread's import, both go on rather than hang)."""

_one_at_a_time = threading.Lock()
"""Held by the thread importing now: the window's heavy imports never run side by side."""


async def import_alone(load: Callable[[], T]) -> T:
    """`load()` (which imports modules) on a worker thread, after any other such load and with
    every other thread's imports held until it returns; its result. The Qt thread keeps drawing
    meanwhile."""
    return await asyncio.to_thread(_alone, load)


def _alone(load: Callable[[], T]) -> T:
    with _one_at_a_time, _imports_held():
        return load()


@contextlib.contextmanager
def _imports_held() -> Iterator[None]:
    """Until the block ends, an `import` on another thread waits. A thread already importing
    when the block begins finishes that import first (it may hold a module's lock that this
    thread will need), and the block's body starts once no other thread is importing."""
    owner = threading.get_ident()
    loading, done = threading.Event(), threading.Event()
    hooked = builtins.__import__

    def held_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002 (builtins' names)
        # Before the body starts, an import inside another goes on (that one is being finished).
        finishing = not loading.is_set() and _importing(sys._getframe(1))
        held = threading.get_ident() != owner and not done.is_set() and not finishing
        if held and not done.wait(WAIT_LIMIT_S):
            log.warning("imported %s beside the import thread after waiting %.0f s", name, WAIT_LIMIT_S)
        return hooked(name, globals, locals, fromlist, level)

    builtins.__import__ = held_import  # first: from here on no other thread begins an import
    try:
        _until_no_other_imports(owner)
        loading.set()
        yield
    finally:
        if builtins.__import__ is held_import:
            builtins.__import__ = hooked
        done.set()


def _until_no_other_imports(owner: int) -> None:
    """Wait (at most WAIT_LIMIT_S) until no thread but `owner` is inside an import or Qt's hook."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while busy := [ident for ident, frame in sys._current_frames().items() if ident != owner and _importing(frame)]:
        if time.monotonic() > deadline:
            log.warning("the imports began beside %d thread(s) still importing", len(busy))
            return
        time.sleep(0.005)  # another thread is reading a module: a few milliseconds


def _importing(frame) -> bool:
    """Whether the stack ending in `frame` is inside an import, or inside Qt's import hook."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_CODE):
            return True
        frame = frame.f_back
    return False


_IMPORT_CODE = ("<frozen importlib._bootstrap", "shibokensupport/")
"""Where the code of an import runs: Python's import machinery, and Qt's hook around it."""
