"""The sandboxed runner: process groups, time limit, output cap, clean environment, cancelling."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from asyncio.base_subprocess import BaseSubprocessTransport
from pathlib import Path

import pytest

from companion.safety.sandbox._runner import (
    OUTPUT_LIMIT,
    TIMEOUT_EXIT,
    run_process,
    safe_environment,
)

PY = sys.executable


async def _ends(pid: int, within_s: float = 5.0) -> bool:
    """Wait for process `pid` (not necessarily our child) to exit, through a pidfd: no polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    loop = asyncio.get_running_loop()
    gone = loop.create_future()
    loop.add_reader(fd, lambda: gone.done() or gone.set_result(True))
    try:
        return await asyncio.wait_for(gone, within_s)
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def test_a_command_runs_in_the_workspace_and_reports_its_exit_code(tmp_path: Path) -> None:
    result = await run_process(["bash", "-c", "pwd; echo oops >&2; exit 3"], cwd=tmp_path, timeout_s=10)
    assert result.exit_code == 3
    assert result.output.splitlines() == [str(tmp_path), "oops"]
    assert "[exit 3]" in result.describe()


async def test_at_the_time_limit_the_whole_group_dies_even_a_child_ignoring_sigterm(tmp_path: Path) -> None:
    child = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('child', __import__('os').getpid(), flush=True)\n"
        "time.sleep(120)\n"
    )
    script = tmp_path / "child.py"
    script.write_text(child)
    # The leader ignores SIGTERM too, so only the SIGKILL after the grace period ends them.
    leader = f"trap '' TERM; {PY} {script} & wait; wait"
    result = await run_process(["bash", "-c", leader], cwd=tmp_path, timeout_s=1.0, grace_s=0.3)
    assert result.timed_out
    assert result.exit_code == TIMEOUT_EXIT
    pid = int(result.output.split()[1])
    assert await _ends(pid)
    assert "exit 124" in result.describe()


async def test_a_well_behaved_command_stops_at_sigterm_without_waiting_for_the_grace(tmp_path: Path) -> None:
    result = await run_process(["sleep", "60"], cwd=tmp_path, timeout_s=0.3, grace_s=30)
    assert result.timed_out and result.exit_code == TIMEOUT_EXIT
    assert result.duration_s < 10


async def test_output_past_the_cap_is_dropped_and_the_result_says_so(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('x' * 300_000)"
    result = await run_process([PY, "-c", code], cwd=tmp_path, timeout_s=20)
    assert result.exit_code == 0
    assert len(result.output) == OUTPUT_LIMIT
    assert result.truncated_bytes == 300_000 - OUTPUT_LIMIT
    assert "output cut at 200 KB" in result.describe()


async def test_no_secret_variable_reaches_a_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-1", "GITHUB_TOKEN": "ghp-2", "DB_PASSWORD": "pw-3",
        "AWS_SECRET_ACCESS_KEY": "aws-4", "LC_SESSION_TOKEN": "lc-5", "SSH_AUTH_SOCK": "/tmp/agent-sock-7",
        "SOME_RANDOM_SETTING": "r-6",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    result = await run_process(["env"], cwd=tmp_path, timeout_s=10, env=safe_environment({"API_TOKEN": "t"}))
    for name, value in secrets.items():
        assert name not in result.output and value not in result.output
    assert "API_TOKEN" not in result.output
    assert "LC_ALL=C.UTF-8" in result.output
    assert "PATH=" in result.output


async def test_the_default_environment_is_the_safe_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SECRET", "hush")
    result = await run_process(["env"], cwd=tmp_path, timeout_s=10)
    assert "hush" not in result.output


async def test_setting_the_cancel_event_kills_the_group(tmp_path: Path) -> None:
    cancel = asyncio.Event()
    task = asyncio.ensure_future(
        run_process(["bash", "-c", "echo started; sleep 60"], cwd=tmp_path, timeout_s=60, cancel=cancel)
    )
    cancel.set()
    result = await task
    assert result.cancelled and not result.timed_out
    assert "cancelled" in result.describe()


async def test_cancelling_the_task_kills_the_group(tmp_path: Path) -> None:
    fifo = tmp_path / "pid.fifo"
    os.mkfifo(fifo)
    task = asyncio.ensure_future(
        run_process(["bash", "-c", f"echo $$ > {fifo}; exec sleep 60"], cwd=tmp_path, timeout_s=60)
    )
    # Reading the FIFO blocks until the command has written its pid: a real event, no polling.
    pid = int(await asyncio.get_running_loop().run_in_executor(None, fifo.read_text))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _ends(pid)


async def test_a_cancelled_run_has_closed_its_process_and_pipes_when_the_cancel_returns(tmp_path: Path) -> None:
    # Left open, the transport is closed by garbage collection after its loop has closed: an
    # "Event loop is closed" traceback, and a killed process of hers nobody had reaped.
    pids: list[int] = []
    started = asyncio.Event()

    async def on_start(pid: int) -> None:
        pids.append(pid)
        started.set()

    task = asyncio.ensure_future(run_process(["sleep", "60"], cwd=tmp_path, timeout_s=60, started=on_start))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    ours = [o for o in gc.get_objects() if isinstance(o, BaseSubprocessTransport) and o.get_pid() == pids[0]]
    assert ours and all(transport.is_closing() for transport in ours), ours


async def test_background_leftovers_are_killed_when_the_command_ends(tmp_path: Path) -> None:
    result = await run_process(["bash", "-c", "sleep 60 & echo $!"], cwd=tmp_path, timeout_s=30)
    assert result.exit_code == 0 and not result.timed_out
    assert await _ends(int(result.output.split()[0]))


async def test_descriptors_handed_to_the_child_are_closed_here_once_it_started(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    result = await run_process(["bash", "-c", f"echo through >&{write_end}"], cwd=tmp_path, timeout_s=10,
                               pass_fds=[write_end])
    assert result.exit_code == 0
    with pytest.raises(OSError):
        os.fstat(write_end)  # ours is closed: the reader sees the end once the child is gone
    with os.fdopen(read_end) as pipe:
        assert pipe.read() == "through\n"


async def test_a_start_up_step_that_fails_ends_the_process_and_raises(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    async def step(pid: int) -> None:
        assert pid > 0
        raise RuntimeError("no network for you")

    with pytest.raises(RuntimeError, match="no network"):
        await run_process(["bash", "-c", f"sleep 30; touch {marker}"], cwd=tmp_path, timeout_s=60,
                          started=step)
    assert not marker.exists()


def test_only_real_locale_categories_pass_not_names_that_merely_start_with_lc() -> None:
    env = safe_environment(source={"LC_ALL": "C", "LC_MESSAGES": "de_DE", "LC_PASS": "hunter2",
                                   "LC_SESSION_TOKEN": "t", "LCX": "1", "PATH": "/bin"})
    assert env == {"LC_ALL": "C", "LC_MESSAGES": "de_DE", "PATH": "/bin"}
