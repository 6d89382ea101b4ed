"""The raw process runner under the gate: own process group, time limit, output cap, clean environment.

Private to companion.safety: tools and plugins start processes only through `Gate.run` and
`Gate.start`, which wrap the command in the kernel sandbox first (a test checks that nothing
else imports this module).

Every command runs in a new session (its own process group) with the workspace as its
working directory and an allowlisted environment with anything secret-looking removed. At
the time limit the whole group gets SIGTERM, then SIGKILL after a grace period, and the
result reports exit code 124. Output beyond the cap is drained and dropped, and the result
says so. Cancelling (the task or the `cancel` event) kills the whole group at once.
When the command itself ends, anything it left running in its group is killed too.
Descriptors handed to the child (`pass_fds`) are closed here once it has started (or failed
to), so the child holds the only copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OUTPUT_LIMIT", "TIMEOUT_EXIT", "LiveProcess", "RunResult", "run_process", "safe_environment",
           "start_process"]

OUTPUT_LIMIT = 200 * 1024
UMASK = 0o077
"""What a started process creates is its owner's alone (no folder made world-writable by
default; bwrap passes the umask through to the command)."""
TIMEOUT_EXIT = 124
KILL_GRACE_S = 5.0
REAP_S = 5.0
"""How long a cancelled run waits for its killed process's end to be read."""

_ALLOWED_NAMES = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR",
    "COLORTERM", "NO_COLOR", "COLUMNS", "LINES", "PYTHONIOENCODING",
    # The locale categories POSIX and glibc define, by name: a prefix would let LC_PASS through.
    "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES",
    "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
})
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT", re.I
)


def safe_environment(extra: Mapping[str, str] | None = None,
                     source: Mapping[str, str] | None = None) -> dict[str, str]:
    """An allowlisted copy of the environment (PATH, HOME, LANG, the LC_ categories, …) with
    secrets removed; `extra` (the caller's own values) is added before the secret filter."""
    source = os.environ if source is None else source
    env = {k: v for k, v in source.items() if k in _ALLOWED_NAMES}
    env.update(extra or {})
    env.setdefault("PATH", os.defpath)
    return {k: v for k, v in env.items() if not _SECRET_NAME.search(k)}


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str
    """stdout and stderr interleaved, decoded, at most OUTPUT_LIMIT bytes of it."""
    truncated_bytes: int = 0
    """How many bytes of output were dropped past the cap."""
    timed_out: bool = False
    cancelled: bool = False
    duration_s: float = 0.0
    limit: str = ""
    """The sentence for a resource limit that stopped it (set by the door), else ""."""

    def describe(self) -> str:
        """The output with a note on anything cut, timed out or cancelled, for the model to read."""
        parts = [self.output.rstrip("\n")] if self.output.strip() else ["(no output)"]
        if self.truncated_bytes:
            parts.append(f"[output cut at {OUTPUT_LIMIT // 1024} KB; "
                         f"{self.truncated_bytes} more bytes were not kept]")
        if self.limit:
            parts.append(f"[stopped: {self.limit}]")
        elif self.timed_out:
            parts.append(f"[stopped: it ran out of time after {self.duration_s:.0f} s; exit 124]")
        elif self.cancelled:
            parts.append("[stopped: cancelled]")
        else:
            parts.append(f"[exit {self.exit_code}]")
        return "\n".join(parts)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    grace_s: float = KILL_GRACE_S,
    output_limit: int = OUTPUT_LIMIT,
    env: Mapping[str, str] | None = None,
    cancel: asyncio.Event | None = None,
    stdin_data: bytes | None = None,
    pass_fds: Sequence[int] = (),
    started: Callable[[int], Awaitable[None]] | None = None,
) -> RunResult:
    """Run `argv` in its own process group in `cwd`; see the module docstring for the limits.

    `started(pid)` is awaited alongside the run once the process exists (the door attaches the
    sandbox's network there); if it raises, the process group is killed and the error raised.
    """
    began = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env=dict(env) if env is not None else safe_environment(),
            stdin=asyncio.subprocess.PIPE if stdin_data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            umask=UMASK,
            pass_fds=tuple(pass_fds),
        )
    finally:
        _close_all(pass_fds)
    pgid = proc.pid  # the leader of a new session is its own group
    kept = bytearray()
    dropped = 0

    async def read_all() -> None:
        nonlocal dropped
        assert proc.stdout is not None
        if stdin_data is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin_data)
                await proc.stdin.drain()
                proc.stdin.close()
        while chunk := await proc.stdout.read(65536):
            room = output_limit - len(kept)
            kept.extend(chunk[:max(room, 0)])
            dropped += max(len(chunk) - max(room, 0), 0)

    async def finish() -> None:
        await _exited(proc)
        # Whatever the command left behind in its group would hold the pipe open: end it.
        _kill_group(pgid, signal.SIGKILL)
        # A process that escaped the group could hold the pipe forever; stop reading soon.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(read_all_task), timeout=2.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout=2.0)

    read_all_task = asyncio.ensure_future(read_all())
    done_task = asyncio.ensure_future(finish())
    cancel_task = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    started_task = asyncio.ensure_future(started(proc.pid)) if started is not None else None
    timed_out = cancelled = False
    try:
        if started_task is not None:
            await _settle(started_task, done_task, pgid)
        waiting = {done_task} | ({cancel_task} if cancel_task else set())
        done, _ = await asyncio.wait(waiting, timeout=timeout_s - (time.monotonic() - began),
                                     return_when=asyncio.FIRST_COMPLETED)
        if done_task not in done:
            if cancel_task is not None and cancel_task in done:
                cancelled = True
                _kill_group(pgid, signal.SIGKILL)
            else:
                timed_out = True
                await _terminate_group(pgid, grace_s)
            await done_task
    except asyncio.CancelledError:
        _kill_group(pgid, signal.SIGKILL)
        await _reaped(done_task)
        raise
    finally:
        for task in (cancel_task, done_task, read_all_task, started_task):
            if task is not None and not task.done():
                task.cancel()
        if started_task is not None and started_task.done() and not started_task.cancelled():
            started_task.exception()  # seen: a step that failed after the process ended says nothing
    exit_code = TIMEOUT_EXIT if timed_out else (proc.returncode if proc.returncode is not None else -1)
    return RunResult(
        exit_code=exit_code,
        output=kept.decode("utf-8", errors="replace"),
        truncated_bytes=dropped,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=time.monotonic() - began,
    )


async def _reaped(done_task: asyncio.Future[None]) -> None:
    """After the kill of a cancelled run, see its end read (a few seconds at most): its pipes and
    transport then close on this loop, not at garbage collection once the loop has closed."""
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(done_task), timeout=REAP_S)


async def _settle(started_task: asyncio.Future[None], done_task: asyncio.Future[None], pgid: int) -> None:
    """Wait for the start-up step (or the process ending first); a failed step ends the group."""
    await asyncio.wait({started_task, done_task}, return_when=asyncio.FIRST_COMPLETED)
    if started_task.done() and started_task.exception() is not None:
        _kill_group(pgid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await done_task
        started_task.result()  # raise it


def _close_all(fds: Sequence[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Wait for the leader itself to exit (proc.wait() also waits for its pipes to close)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return  # already exited and reaped
    except (AttributeError, OSError):
        await proc.wait()
        return
    loop = asyncio.get_running_loop()
    exited = loop.create_future()
    loop.add_reader(fd, lambda: exited.done() or exited.set_result(None))
    try:
        await exited
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _kill_group(pgid: int, sig: int) -> bool:
    """Signal the group; False when nobody in it is left."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def _terminate_group(pgid: int, grace_s: float) -> None:
    """SIGTERM the group, then SIGKILL whatever is still there after `grace_s`."""
    if not _kill_group(pgid, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace_s
    # Polling the group is the only portable way to see members that are not our children.
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        if not _group_alive(pgid):
            return
    _kill_group(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    if not os.path.isdir("/proc"):
        return True  # can't tell zombies apart: wait the whole grace period
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies still count for killpg; a group whose members are all zombies is finished.
    return any(_is_live_member(pid, pgid) for pid in _pids())


def _pids() -> list[int]:
    with contextlib.suppress(OSError):
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    return []


def _is_live_member(pid: int, pgid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Fields after the command name: state ppid pgrp ...
    fields = stat.rsplit(")", 1)[-1].split()
    return len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z"


STDERR_TAIL = 64 * 1024


class LiveProcess:
    """A long-lived process with stdin/stdout pipes (an MCP stdio server, say), in its own group.

    stderr is kept, last 64 KB, for `stderr_tail()`; `stop()` closes stdin, sends SIGTERM to
    the group and SIGKILL after the grace period. `async with` stops it on the way out.
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self.pid = proc.pid
        self._stderr = bytearray()
        self._drain = asyncio.ensure_future(self._keep_stderr())
        self.watcher: asyncio.Future[None] | None = None
        """Set by whoever records its end (the door)."""
        self.visible: tuple[str, ...] = ()
        """What of the folders the sandbox hides it was shown, read-only (its own program's files)."""

    @property
    def stdin(self) -> asyncio.StreamWriter:
        assert self._proc.stdin is not None
        return self._proc.stdin

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self._proc.stdout is not None
        return self._proc.stdout

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", errors="replace")

    async def wait(self) -> int:
        return await self._proc.wait()

    async def stop(self, grace_s: float = 2.0) -> int:
        """End it (and everything it started); returns its exit code."""
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        if self._proc.returncode is None:
            await _terminate_group(self.pid, grace_s)
        else:
            _kill_group(self.pid, signal.SIGKILL)
        code = await self._proc.wait()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(self._drain, timeout=1.0)
        return code

    async def __aenter__(self) -> LiveProcess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _keep_stderr(self) -> None:
        stream = self._proc.stderr
        if stream is None:
            return
        while chunk := await stream.read(65536):
            self._stderr.extend(chunk)
            del self._stderr[:-STDERR_TAIL]


async def start_process(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
                        pass_fds: Sequence[int] = ()) -> LiveProcess:
    """Start `argv` with piped stdin/stdout/stderr in its own process group, and return at once."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env=dict(env) if env is not None else safe_environment(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            umask=UMASK,
            limit=1 << 20,
            pass_fds=tuple(pass_fds),
        )
    finally:
        _close_all(pass_fds)
    return LiveProcess(proc)
