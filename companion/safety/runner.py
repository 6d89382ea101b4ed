"""The sandboxed process runner: own process group, time limit, output cap, clean environment.

Every command runs in a new session (its own process group) with the workspace as its
working directory and an allowlisted environment with anything secret-looking removed. At
the time limit the whole group gets SIGTERM, then SIGKILL after a grace period, and the
result reports exit code 124. Output beyond the cap is drained and dropped, and the result
says so. Cancelling (the task or the `cancel` event) kills the whole group at once.
When the command itself ends, anything it left running in its group is killed too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OUTPUT_LIMIT", "TIMEOUT_EXIT", "RunResult", "run_process", "safe_environment"]

OUTPUT_LIMIT = 200 * 1024
TIMEOUT_EXIT = 124
KILL_GRACE_S = 5.0

_ALLOWED_NAMES = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR",
    "COLORTERM", "NO_COLOR", "COLUMNS", "LINES", "PYTHONIOENCODING",
})
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT", re.I
)


def safe_environment(extra: Mapping[str, str] | None = None,
                     source: Mapping[str, str] | None = None) -> dict[str, str]:
    """An allowlisted copy of the environment (PATH, HOME, LANG, LC_*, …) with secrets removed."""
    source = os.environ if source is None else source
    env = {k: v for k, v in source.items() if k in _ALLOWED_NAMES or k.startswith("LC_")}
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

    def describe(self) -> str:
        """The output with a note on anything cut, timed out or cancelled, for the model to read."""
        parts = [self.output.rstrip("\n")] if self.output.strip() else ["(no output)"]
        if self.truncated_bytes:
            parts.append(f"[output cut at {OUTPUT_LIMIT // 1024} KB; "
                         f"{self.truncated_bytes} more bytes were not kept]")
        if self.timed_out:
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
) -> RunResult:
    """Run `argv` in its own process group in `cwd`; see the module docstring for the limits."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=dict(env) if env is not None else safe_environment(),
        stdin=asyncio.subprocess.PIPE if stdin_data is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
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
    timed_out = cancelled = False
    try:
        waiting = {done_task} | ({cancel_task} if cancel_task else set())
        done, _ = await asyncio.wait(waiting, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
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
        raise
    finally:
        for task in (cancel_task, done_task, read_all_task):
            if task is not None and not task.done():
                task.cancel()
    exit_code = TIMEOUT_EXIT if timed_out else (proc.returncode if proc.returncode is not None else -1)
    return RunResult(
        exit_code=exit_code,
        output=kept.decode("utf-8", errors="replace"),
        truncated_bytes=dropped,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=time.monotonic() - started,
    )


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
