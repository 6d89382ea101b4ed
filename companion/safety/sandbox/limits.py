"""Resource limits for one sandboxed call: processes, memory, file size, CPU time, and the sentence when one is hit.

Each limit is set inside the sandbox by util-linux's `prlimit`, the first program there, so
everything the command starts inherits it and nothing inside can raise it again. As root a
cgroup of its own per call holds the processes and the whole call's memory (cgroup.py). The
kernel doesn't count root's own processes against RLIMIT_NPROC: where the sandbox's user is
root outside (no idmapped mounts: identity.py) and no cgroup can be made, a watcher counts
them (`ProcessCount`). As a user, RLIMIT_NPROC, counted in each call's own user namespace,
holds the call, and the same watcher stops a call held at that cap (a fork bomb never ends
by itself). RLIMIT_DATA counts private memory only; where no cgroup holds the
call's memory (a user, a container) the seccomp filter keeps shared memory out (seccomp.py:
shared anonymous mappings, memfd, System V segments, message queues and semaphores) and
/dev/zero is /dev/full, which can't be mapped. Left open there: UNIX socket buffers (measured
as uid 65534: 600 MB in one process under a 256 MB limit). No rlimit counts them (descriptors
times processes only bounds how many sockets), and seccomp sees a call's arguments, not what a
socket holds: refusing socketpair would break asyncio. Only a cgroup's memory controller can
hold them, and a user gets one only from a systemd user session (none where this was built).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "ProcessCount", "limit_sentence", "prlimit_argv"]

GB = 1 << 30
SIGXCPU, SIGXFSZ = signal.SIGXCPU.value, signal.SIGXFSZ.value


@dataclass(frozen=True)
class Limits:
    """The most one call may use; each is per process except `processes`."""

    processes: int = 512
    """Processes (and threads) at once, for the whole call."""
    memory_bytes: int = 4 * GB
    """Memory one process may allocate (RLIMIT_DATA: heap and private mappings, not
    reservations), and, where a cgroup holds the call (as root), the whole call's memory."""
    file_bytes: int = 1 * GB
    """The largest file it may write."""
    cpu_s: int = 3600
    """CPU seconds per process: a backstop for servers; a command's own time limit comes first."""
    tmp_bytes: int = 512 << 20
    """The private /tmp (a tmpfs in memory)."""
    shm_bytes: int = 64 << 20
    """The private /dev/shm (shared memory, also a tmpfs)."""


def prlimit_argv(limits: Limits) -> list[str]:
    """`prlimit … --`, to put before the command inside the sandbox (soft = hard: no raising)."""
    # Its real path: PATH may name it through a folder the sandbox hides (a link in ~/bin).
    prlimit = os.path.realpath(shutil.which("prlimit") or "/usr/bin/prlimit")
    return [prlimit, f"--nproc={limits.processes}", f"--data={limits.memory_bytes}",
            f"--fsize={limits.file_bytes}", f"--cpu={limits.cpu_s}", "--core=0", "--"]


def limit_sentence(exit_code: int, output: str, limits: Limits, *, too_many_processes: bool = False,
                   out_of_memory: bool = False) -> str:
    """What limit stopped a call that ended with `exit_code` and `output`, as a sentence ("" when
    none did); the flags are what its cgroup saw."""
    if too_many_processes:
        return "It tried to start too many processes, so the sandbox stopped it."
    if out_of_memory:
        return f"It tried to use more than {_size(limits.memory_bytes)} of memory, so the sandbox stopped it."
    code, text = exit_code, output
    # The shell reports a child the kernel stopped for a limit in these words, whatever it exits with.
    if code in (128 + SIGXFSZ, -SIGXFSZ) or "File size limit exceeded" in text or \
            (code != 0 and "File too large" in text):
        return f"It tried to write a file over {_size(limits.file_bytes)}, so the sandbox stopped it."
    if code in (128 + SIGXCPU, -SIGXCPU) or "CPU time limit exceeded" in text:
        return "It ran out of CPU time, so the sandbox stopped it."
    if "fork: Resource temporarily unavailable" in text or "fork: retry" in text \
            or (code != 0 and "Cannot fork" in text):
        return "It tried to start too many processes, so the sandbox stopped it."
    if code == 0:
        return ""
    if any(sign in text for sign in ("MemoryError", "Cannot allocate memory", "out of memory",
                                     "cannot allocate", "std::bad_alloc")):
        return f"It tried to use more than {_size(limits.memory_bytes)} of memory, so the sandbox stopped it."
    if "BlockingIOError: [Errno 11]" in text:  # Python's os.fork() at the limit
        return "It tried to start too many processes, so the sandbox stopped it."
    return ""


def _size(n: int) -> str:
    return f"{n / GB:g} GB" if n >= GB else f"{n >> 20} MB"


class ProcessCount:
    """A watcher's count of the sandbox's processes (threads included), for the door to stop the
    call once it holds `processes` at one look.

    As a user (no cgroup of her own), RLIMIT_NPROC in the call's own user namespace is the hard
    cap: the kernel counts the call's processes there apart from the user's others, so a fork
    bomb stalls at the limit while the user's programs keep forking; but a stalled bomb never
    ends (bash retries its forks), so this count sees it at the cap and the door stops it, with
    the sentence. Where she is root and no cgroup can be made (a container with /sys/fs/cgroup
    read-only), nothing counts root's processes, and this is only a backstop: between two looks
    a fork bomb can take every free PID on the machine (measured here: it did).

    The sandbox is the tree under its first process (bwrap): its PID namespace's init, bwrap's
    own, is in that tree and takes every orphan, so a double fork stays in it."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self.leader: int | None = None
        """The sandbox's first process outside it (bwrap); set once it has started."""
        self._hit = False

    def hit(self) -> bool:
        """True once the sandbox held `processes` processes (threads count) at one look."""
        if self._hit or self.leader is None:
            return self._hit
        self._hit = self.count() >= self.processes
        return self._hit

    def count(self) -> int:
        """Tasks (processes and their threads) under the leader, the leader itself not counted."""
        assert self.leader is not None
        total, todo, seen = 0, [self.leader], set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            if pid != self.leader:
                total += len(tasks)
            for task in tasks:
                with contextlib.suppress(OSError, ValueError):
                    todo += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        return total

    def close(self) -> bool:
        return True

    async def aclose(self, within_s: float = 0.0) -> None:
        return None
