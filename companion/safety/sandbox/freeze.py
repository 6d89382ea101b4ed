"""Stopping a running sandbox, every process of it, until it is let go (the still workspace).

The sandbox is the tree under its first process (bwrap's PID namespace takes every orphan, so a
double fork stays in it: limits.py). Each process found gets SIGSTOP, which it can neither catch
nor ignore; the tree is walked again until a walk finds nothing new and every task of every
process found is stopped (a write already in the kernel finishes first). A process stopped this
way forks no more, so the last walk is the whole sandbox. io_uring, whose queued work could go
on without its process, is refused inside (seccomp.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["freeze_tree", "thaw"]

_SETTLE_S = 2.0
"""How long a walk waits for the processes it stopped to be seen stopped."""


def freeze_tree(leader: int) -> list[int]:
    """Stop `leader` and every process under it; the pids stopped (for `thaw`). Raises
    PermissionError (after letting go of those it stopped) when one can't be stopped."""
    stopped: list[int] = []
    seen: set[int] = set()
    while True:
        new = [pid for pid in _tree(leader) if pid not in seen]
        if not new:
            return stopped
        for pid in new:
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            except PermissionError:
                thaw(stopped)
                raise
            stopped.append(pid)
        _settle(new)


def thaw(pids: list[int]) -> None:
    """Let the stopped processes go on (those gone meanwhile are skipped)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)


def _tree(leader: int) -> list[int]:
    found, todo = [], [leader]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.append(pid)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError, ValueError):
                    todo += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def _settle(pids: list[int]) -> None:
    """Wait until every task of `pids` is stopped (or gone), up to _SETTLE_S."""
    deadline = time.monotonic() + _SETTLE_S
    pending = list(pids)
    while pending and time.monotonic() < deadline:
        pending = [pid for pid in pending if not _all_stopped(pid)]
        if pending:
            time.sleep(0.001)


def _all_stopped(pid: int) -> bool:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/stat").read_text()
        except OSError:
            continue
        state = text[text.rindex(")") + 2:][:1]
        if state not in ("T", "t", "Z", "X"):
            return False
    return True
