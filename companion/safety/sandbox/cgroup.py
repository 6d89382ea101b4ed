"""A cgroup of its own for one sandboxed call, where she may make one (as root): a hard cap on its processes and its memory.

The kernel doesn't count root's own processes against RLIMIT_NPROC, and a sandbox started by
root maps its user to root outside, so as root the number of processes is held here instead
(the pids controller); the memory controller, where there is one, holds the memory of the
whole call, so many processes can't add up to more than one may (the kernel's OOM killer
then ends one of them, and only one of them). The sandbox can't leave its cgroup: /sys is
read-only inside. Works with cgroup v2 (one folder) and v1 (a folder per controller).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from pathlib import Path

__all__ = ["CallCgroup"]

_PREFIX = "companion-"
_STALE_S = 600.0
_ROOT = Path("/sys/fs/cgroup")


class CallCgroup:
    """One call's cgroup: `wrap(argv)` makes the first process join it before anything runs;
    `hit()` / `oom_killed()` say whether the call reached a cap; `aclose()` removes it."""

    def __init__(self, folders: list[Path], pids: Path, memory: Path | None) -> None:
        self.folders = folders
        """Every folder made (one on cgroup v2, one per controller on v1)."""
        self._pids = pids
        self._memory = memory

    @classmethod
    def make(cls, processes: int, memory_bytes: int) -> CallCgroup | None:
        """A fresh cgroup capped at `processes` (and at `memory_bytes` where the memory
        controller is there), or None where no pids cgroup can be made here."""
        name = f"{_PREFIX}{secrets.token_hex(6)}"
        pids = _make(_parents("pids"), name, {"pids.max": str(processes)})
        if pids is None:
            return None
        folders = [pids]
        limits = {"memory.max": str(memory_bytes), "memory.swap.max": "0"} if _is_v2(pids) else \
            {"memory.limit_in_bytes": str(memory_bytes), "memory.memsw.limit_in_bytes": str(memory_bytes)}
        if _is_v2(pids) and "memory" in _controllers(pids.parent):
            memory = pids if _write_all(pids, limits) else None
        else:
            memory = _make(_parents("memory"), name, limits)
            if memory is not None:
                folders.append(memory)
        return cls(folders, pids, memory)

    @property
    def holds_memory(self) -> bool:
        """The memory controller holds the whole call's memory (shared memory and memfd too)."""
        return self._memory is not None

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started by a shell that first moves itself into the cgroup (its children follow)."""
        procs = [str(folder / "cgroup.procs") for folder in self.folders]
        script = 'for p in "$@"; do [ "$p" = -- ] && break; echo $$ > "$p" || exit 125; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *procs, "--", *argv]

    def hit(self) -> bool:
        """True once a fork in the call was refused for the cap."""
        return _counter(self._pids / "pids.events", "max") > 0

    def oom_killed(self) -> bool:
        """True once the kernel ended a process of the call for the memory cap."""
        if self._memory is None:
            return False
        name = "memory.events" if _is_v2(self._memory) else "memory.oom_control"
        return _counter(self._memory / name, "oom_kill") > 0

    def close(self) -> bool:
        """Remove the cgroup; False while something in it has not ended yet."""
        done = True
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done

    async def aclose(self, within_s: float = 5.0) -> None:
        """Remove the cgroup once the killed sandbox's processes are gone (the kernel takes a moment)."""
        deadline = time.monotonic() + within_s
        while not self.close() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)


def _make(parents: list[Path], name: str, settings: dict[str, str]) -> Path | None:
    for parent in parents:
        _sweep(parent)
        folder = parent / name
        try:
            folder.mkdir()
        except OSError:
            continue
        if _write_all(folder, settings, required=next(iter(settings))):
            return folder
        with contextlib.suppress(OSError):
            folder.rmdir()
    return None


def _write_all(folder: Path, settings: dict[str, str], required: str | None = None) -> bool:
    """Write each setting in order; False when `required` (or, without it, the first) failed."""
    required = required or next(iter(settings))
    for key, value in settings.items():
        try:
            (folder / key).write_text(value)
        except OSError:
            if key == required:
                return False  # an optional one (swap accounting off) may be missing
    return True


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0] == key:
                return int(fields[1])
    except (OSError, ValueError):
        pass
    return 0


def _is_v2(folder: Path) -> bool:
    return (folder / "cgroup.controllers").exists()


def _controllers(folder: Path) -> list[str]:
    try:
        return (folder / "cgroup.subtree_control").read_text().split()
    except OSError:
        return []


def _sweep(parent: Path) -> None:
    """Remove cgroups left empty by a run that never cleaned up (she was killed): any older than
    ten minutes (a running server's is not empty, so rmdir leaves it alone)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            if entry.name.startswith(_PREFIX) and entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > _STALE_S:
                        os.rmdir(entry.path)


def _parents(controller: str) -> list[Path]:
    """Where a child cgroup of ours with `controller` could go, writable: v2 first, then v1."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        number, controllers, where = line.split(":", 2)
        where = where.lstrip("/")
        if number == "0" and controllers == "":
            for root in (_ROOT, _ROOT / "unified"):
                if controller in _controllers(root / where):
                    found.append(root / where)
        elif controller in controllers.split(","):
            folder = _ROOT / controller / where
            if folder.is_dir():
                found.append(folder)
    return [f for f in found if os.access(f, os.W_OK)]
