"""Done-when: in `companion chat` against the scripted brain, `rm -rf` asks first and runs nothing
when declined or unanswered."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from brain_harness import make_config
from terminal import read_until

from companion.events import EventBus, Outcome, ToolFinished
from companion.runtime import Companion
from companion.safety.consent.terminal import TerminalApprover

RM_CALL = {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf something"}}]}


def make_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "something" / "inner").mkdir(parents=True)
    (workspace / "something" / "inner" / "precious.txt").write_text("keep\n")
    return workspace


def test_declining_on_the_terminal_runs_nothing(tmp_path: Path, scripted_brain) -> None:
    workspace = make_workspace(tmp_path)
    scripted_brain.push(RM_CALL, {"text": "[sad] Okay, I left it alone."})
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", scripted_brain.url,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(workspace),
               "--once", "please delete the something folder"]
    child = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    try:
        shown = read_until(master, "Allow?")
        assert "rm -rf something" in shown
        assert "[a]lways" not in shown  # recursive rm is never saveable
        os.write(master, b"n\n")
        rest = read_until(master, "I left it alone")
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
        os.close(master)
    assert (workspace / "something" / "inner" / "precious.txt").exists()
    tool_result = scripted_brain.bodies[1]["messages"][-1]
    assert tool_result["role"] == "tool" and "You said no" in tool_result["content"]
    assert "[complete]" not in rest and "[fail]" not in rest  # a refused call says neither


def test_with_no_terminal_chat_runs_nothing(tmp_path: Path, scripted_brain) -> None:
    workspace = make_workspace(tmp_path)
    # "y" arrives as a turn of its own (no card is open to answer): it gets a reply too.
    scripted_brain.push(RM_CALL, {"text": "[neutral] I couldn't ask you."}, {"text": "[neutral] Okay."})
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", scripted_brain.url,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(workspace)]
    done = subprocess.run(command, input="delete it\ny\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (workspace / "something" / "inner" / "precious.txt").exists()
    assert "no one here to approve" in scripted_brain.bodies[1]["messages"][-1]["content"]


async def test_an_unanswered_terminal_question_expires_and_runs_nothing(tmp_path: Path, scripted_brain) -> None:
    workspace = make_workspace(tmp_path)
    scripted_brain.push(RM_CALL, {"text": "[neutral] You didn't answer, so I left it."})
    bus = EventBus()
    events: list = []
    bus.subscribe(events.append)
    companion = Companion(make_config(tmp_path, scripted_brain.url), bus)
    await companion.start()
    master, slave = pty.openpty()
    try:
        out = io.StringIO()
        companion.gate.approver = TerminalApprover(slave, out)
        companion.gate.text_expiry_s = 0.2
        result = await companion.ask("delete the something folder")
    finally:
        await companion.close()
        os.close(master)
        os.close(slave)
    assert result.error is None
    assert "No answer in time" in out.getvalue()
    assert (workspace / "something" / "inner" / "precious.txt").exists()
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.outcome for e in finished] == [Outcome.REFUSED]
    assert companion.gate.audit.entries()[-1]["decision"] == "expired"


async def test_time_the_user_takes_to_answer_does_not_count_against_the_tool_budget(
    tmp_path: Path, scripted_brain
) -> None:
    import asyncio

    from companion.safety.consent.approval import Answer, Decision

    class SlowUser:
        async def ask(self, request):
            await asyncio.sleep(3.0)  # the user reads the card for twice the whole budget
            return Answer(Decision.APPROVED)

    make_workspace(tmp_path)
    scripted_brain.push({"tool_calls": [{"name": "shell", "arguments": {"command": "touch made-it"}}]},
                        {"text": "[happy] Done."})
    bus = EventBus()
    events: list = []
    bus.subscribe(events.append)
    companion = Companion(make_config(tmp_path, scripted_brain.url, tools={"text_budget_s": 1.5}), bus)
    await companion.start()
    try:
        companion.gate.approver = SlowUser()
        await companion.ask("make the file")
    finally:
        await companion.close()
    assert [e.outcome for e in events if isinstance(e, ToolFinished)] == [Outcome.OK]
    assert (tmp_path / "workspace" / "made-it").exists()


def test_a_background_job_asks_on_the_terminal_while_chat_waits_for_the_next_line(
    tmp_path: Path, scripted_brain
) -> None:
    workspace = make_workspace(tmp_path)
    scripted_brain.push(
        {"for": "tidy", "tool_calls": [{"name": "start_work", "arguments": {"task": "JOB: make a file"}}]},
        {"for": "tidy", "text": "[happy] On it, in the background."},
        {"for": "JOB:", "tool_calls": [{"name": "shell", "arguments": {"command": "touch made-by-job"}}]},
        {"for": "JOB:", "text": "[happy] Made the file."},
    )
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", scripted_brain.url,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(workspace)]
    child = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    try:
        read_until(master, "you> ")
        os.write(master, b"please tidy up\n")
        shown = read_until(master, "Allow?")  # asked while chat sits at its prompt
        assert "touch made-by-job" in shown
        os.write(master, b"y\n")
        read_until(master, "Made the file")
        os.write(master, b"/quit\n")
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
        os.close(master)
    assert (workspace / "made-by-job").exists()
    # The "y" answered the question; it never reached the brain as a message.
    users = [m["content"] for b in scripted_brain.bodies for m in b["messages"] if m["role"] == "user"]
    assert "y" not in users
