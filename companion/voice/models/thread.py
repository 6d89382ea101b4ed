"""Where her models run: one thread per model; her voice's at a lower CPU priority than the window.

On a two-core laptop, synthesis (onnxruntime on both cores) competes with the Qt thread that
paints her face and runs the event loop; at equal priority her face stuttered while she spoke
(frame p99 24 ms instead of 16). At a lower priority piper still gets every cycle the window
leaves, which is nearly all of them. The turn-critical models are the exception
(`TURN_CRITICAL`): the recogniser and the turn model run while the user waits for her to
answer, short bursts between her sentences, and at nice +10 beside a busy process they got
about a tenth of a contested core (CFS weights 110 against 1024): their checks at a pause
took 115-414 ms instead of ~50 (bench/turn_blackbox.py), and the turn waited. A model is loaded on
its thread too, so the helper threads its runtime starts (onnxruntime's, CTranslate2's)
inherit the priority. Where threads have no priority of their own (not Linux), nothing
changes. numpy's BLAS works on the calling thread only, so none of it runs at the window's
priority.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

NICER_BY = 10
"""How much lower than the rest of the process (Unix nice steps: 19 is the lowest)."""
TURN_CRITICAL = 0
"""`nicer_by` for the models the end of a turn waits on: the window's own priority."""


def _lower_priority(by: int) -> None:
    if by <= 0 or not hasattr(os, "setpriority") or sys.platform != "linux":
        return  # elsewhere the priority belongs to the whole process, not to a thread
    try:
        current = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), min(19, current + by))
    except OSError as exc:
        log.debug("model thread keeps its priority: %s", exc)


_blas_limited = False


def _keep_blas_on_the_calling_thread() -> None:
    # numpy's OpenBLAS starts its helper threads when numpy is imported, at the window's
    # priority, not at the model threads' lower one: while Whisper computed its features
    # they took a third of a core from the thread that paints her face (frame p99 25 ms
    # instead of 20). Her arrays are small: one thread does them faster (Whisper on 3 s of
    # audio 205 → 182 ms). For this process only; the servers and tools she starts keep
    # their own defaults.
    global _blas_limited
    if not _blas_limited:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        _blas_limited = True


def name_os_thread(name: str) -> None:
    """Give the calling thread `name` where the OS shows it (Linux: `top -H`, /proc/…/comm), so
    CPU time can be told apart per thread; the helper threads a runtime starts from it inherit
    the name. Python 3.11 names its threads for Python only."""
    try:
        with open("/proc/thread-self/comm", "w") as comm:
            comm.write(name[:15])  # the kernel keeps 15 bytes
    except OSError:
        pass  # not Linux, or no /proc: the name is only for reading CPU time


class ModelThread:
    """call() runs a function on the thread and waits; run() awaits it from the event loop.
    `nicer_by`: how many nice steps below the process it runs (a thread can't take them back)."""

    def __init__(self, name: str, *, nicer_by: int = NICER_BY) -> None:
        self.name = name
        self.nicer_by = nicer_by
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name, initializer=self._started)
        self._ident: int | None = None
        self.native_id: int | None = None
        """The OS thread id once the thread has started (where its priority can be read)."""

    def _started(self) -> None:
        self._ident = threading.get_ident()
        self.native_id = threading.get_native_id()
        name_os_thread(self.name)
        _lower_priority(self.nicer_by)
        _keep_blas_on_the_calling_thread()

    def call(self, fn: Callable[..., T], *args) -> T:
        if threading.get_ident() == self._ident:
            return fn(*args)  # already on it (a load that runs a warm-up pass)
        return self._pool.submit(fn, *args).result()

    def submit(self, fn: Callable[..., T], *args) -> Future[T]:
        """Queue `fn` on the thread without waiting (a load in the background)."""
        return self._pool.submit(fn, *args)

    async def run(self, fn: Callable[..., T], *args) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
