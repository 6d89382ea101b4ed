"""What a test leaves running when it ends: asyncio tasks, threads and child processes.

Each is first given a moment to end on its own (a cancelled task unwinding on its own loop, a
thread finishing its last request, a child exiting): that wait costs nothing when nothing is
left. Whatever is still there after it outlived its owner, and the test fails naming it.
"""

from __future__ import annotations

import asyncio
import os
import select
import threading
import time

from companion.voice.models.thread import ModelThread

GRACE_S = 10.0
"""How long something still ending may take (a busy two-core machine) before it counts as left."""

def _lives_by_design(thread: threading.Thread) -> bool:
    """Threads that outlive a test by design, each with its owner's reason:

    - her models' threads (voice.models.thread.ModelThread, a one-thread pool each): a model is
      loaded once for as long as its engine lives, and a closed voice session keeps its engines
      (what it heard stays readable); the thread ends when the engine is collected;
    - tqdm's monitor (a progress bar's, as faster-whisper opens): one per process, tqdm's own,
      ended by tqdm when its last bar is gone.
    """
    initializer = (getattr(thread, "_args", None) or (None,) * 3)[2:3]
    if initializer and isinstance(getattr(initializer[0], "__self__", None), ModelThread):
        return True
    return type(thread).__module__ == "tqdm._monitor"


def pending_tasks(loop: asyncio.AbstractEventLoop) -> set[asyncio.Task]:
    return {task for task in asyncio.all_tasks(loop) if not task.done()}


def settle(loop: asyncio.AbstractEventLoop, timeout: float = GRACE_S) -> list[asyncio.Task]:
    """Run `loop` (stopped) until its tasks end on their own or `timeout` passes; then cancel
    those left, let them unwind on the same loop, and return them (the leak)."""
    deadline = time.monotonic() + timeout
    # Ending tasks may start others (the loop closes a dropped async generator in a task of its own).
    while (pending := pending_tasks(loop)) and (remaining := deadline - time.monotonic()) > 0:
        loop.run_until_complete(asyncio.wait(pending, timeout=remaining))
    left = pending_tasks(loop)
    for task in left:
        task.cancel()
    if left:
        loop.run_until_complete(asyncio.wait(left, timeout=timeout))
    return sorted(left, key=id)


def describe_tasks(tasks: list[asyncio.Task]) -> list[str]:
    return [f"task {task.get_coro()!r}" for task in tasks]


def threads() -> set[threading.Thread]:
    return set(threading.enumerate())


def children() -> set[int]:
    """This process's running child processes (Linux: each thread's /proc children list)."""
    found = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/children") as listed:
                found.update(int(pid) for pid in listed.read().split())
        except OSError:
            continue  # the thread ended meanwhile
    return {pid for pid in found if _state(pid) not in ("Z", None)}  # a zombie has ended: only its status is left


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None  # gone


def outliving_threads(before: set[threading.Thread], deadline: float) -> list[str]:
    """Threads started since `before` that do not end by `deadline` (monotonic)."""
    left = []
    for thread in threads() - before:
        if _lives_by_design(thread):
            continue
        if isinstance(thread, threading._DummyThread):
            # Started outside Python (a D-Bus or audio library): it cannot be joined, and its
            # Python record outlives it; the kernel says whether it still runs.
            if os.path.exists(f"/proc/self/task/{thread.native_id}"):
                left.append(f"foreign thread {thread.name} (native id {thread.native_id})")
            continue
        if thread.is_alive():  # not while its creator is still starting it: join() would refuse
            thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            left.append(f"thread {thread.name} ({getattr(thread, '_target', None)!r})")
    return left


def outliving_children(before: set[int], deadline: float) -> list[str]:
    """Child processes started since `before` still running at `deadline` (monotonic)."""
    left = []
    for pid in children() - before:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            ended, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(fd)
        if not ended:
            left.append(f"child process {pid} ({_command(pid)})")
    return left


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()[:160]
    except OSError:
        return "gone"
