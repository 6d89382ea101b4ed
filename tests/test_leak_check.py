"""The check every test passes at its end (tests/helpers/leaks.py): what is still ending is
waited for, what would outlive the test is named."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import leaks


def test_a_thread_ending_on_its_own_is_waited_for_and_one_still_running_is_named():
    before = leaks.threads()
    finish, never = threading.Event(), threading.Event()
    ending = threading.Thread(target=finish.wait, name="ending")
    stuck = threading.Thread(target=never.wait, name="stuck")
    ending.start()
    stuck.start()
    finish.set()
    try:
        left = leaks.outliving_threads(before, time.monotonic() + 0.5)
    finally:
        never.set()
        stuck.join()
    assert len(left) == 1 and left[0].startswith("thread stuck")


def test_a_child_process_still_running_is_named_and_one_that_ended_is_not():
    before = leaks.children()
    ended = subprocess.run([sys.executable, "-c", "pass"], check=True)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        left = leaks.outliving_children(before, time.monotonic() + 0.5)
    finally:
        child.communicate(b"")
    assert ended.returncode == 0
    assert left == [f"child process {child.pid} ({sys.executable} -c import sys; sys.stdin.read())"]


def test_a_task_ending_on_its_own_loop_is_let_end_and_only_one_that_would_not_is_cancelled_and_named():
    loop = asyncio.new_event_loop()
    try:
        nudge = asyncio.Event()

        async def ends_when_nudged() -> str:
            await nudge.wait()
            return "ended"

        async def waits_forever() -> None:
            await asyncio.Event().wait()

        ending = loop.create_task(ends_when_nudged())
        stuck = loop.create_task(waits_forever())
        loop.call_soon(nudge.set)  # happens only once settle runs the loop
        left = leaks.settle(loop, timeout=0.5)
        assert left == [stuck] and stuck.cancelled()
        assert ending.result() == "ended"
        assert leaks.describe_tasks(left)[0].startswith("task <coroutine object test_a_task_ending")
    finally:
        loop.close()
