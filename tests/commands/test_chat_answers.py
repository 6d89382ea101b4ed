"""`companion chat` in a real pseudo-terminal: while a question is pending, what the user types
answers it (never reaching the brain), the question comes back after her reply covers it, and
a second question waits visibly behind the first."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from terminal import read_until

JOB_CALL = {"for": "tidy", "tool_calls": [{"name": "start_work", "arguments": {"task": "JOB: make a file"}}]}


def start_chat(tmp_path: Path, url: str) -> tuple[subprocess.Popen, int, Path]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", url,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(workspace)]
    child = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    return child, master, workspace


def user_messages(scripted_brain) -> list[str]:
    return [m["content"] for b in scripted_brain.bodies for m in b["messages"] if m["role"] == "user"]


def test_a_yes_typed_after_her_reply_streamed_over_a_jobs_question_answers_it(tmp_path: Path, scripted_brain) -> None:
    # Her foreground reply streams for ~3 s; the job asks at once, so the question is printed
    # while she is still talking and her reply lands under it.
    scripted_brain.push(
        JOB_CALL,
        {"for": "tidy", "text": "[happy] On it, in the background, while we keep talking about other things.",
         "chunks": 8, "chunk_delay": 0.4},
        {"for": "JOB:", "tool_calls": [{"name": "shell", "arguments": {"command": "touch made-by-job"}}]},
        {"for": "JOB:", "text": "[happy] Made the file."},
    )
    child, master, workspace = start_chat(tmp_path, scripted_brain.url)
    try:
        read_until(master, "you> ")
        os.write(master, b"please tidy up\n")
        shown = read_until(master, "[say] On it")
        assert "Allow?" in shown and "touch made-by-job" in shown  # asked while she streamed
        # The question comes back after her reply, in place of chat's own prompt.
        again = read_until(master, "Allow?", already=shown.rpartition("[say] On it")[2])
        assert "touch made-by-job" in again and "you> " not in again
        os.write(master, b"y\n")
        made = read_until(master, "Made the file")
        read_until(master, "you> ", already=made.rpartition("Made the file")[2])  # the prompt is last again
        os.write(master, b"/quit\n")
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
        os.close(master)
    assert (workspace / "made-by-job").exists()
    assert "y" not in user_messages(scripted_brain)  # the answer never reached the brain


def test_two_commands_asked_at_once_are_asked_one_after_the_other_and_each_answer_goes_to_the_one_shown(
    tmp_path: Path, scripted_brain
) -> None:
    # The turn starts a job and then runs a command of its own: two questions at once. Each
    # starts a process, so the workspace holds still for the first until its run has ended
    # (safety/consent/still.py): the second card comes after it, never beside it.
    scripted_brain.push(
        {"for": "tidy", "tool_calls": [{"name": "start_work", "arguments": {"task": "JOB: make a file"}},
                                       {"name": "shell", "arguments": {"command": "touch made-by-turn"}}]},
        {"for": "tidy", "text": "[happy] Both handled."},
        {"for": "JOB:", "tool_calls": [{"name": "shell", "arguments": {"command": "touch made-by-job"}}]},
        {"for": "JOB:", "text": "[happy] Job finished."},
    )
    child, master, workspace = start_chat(tmp_path, scripted_brain.url)
    try:
        read_until(master, "you> ")
        os.write(master, b"please tidy up\n")
        seen = read_until(master, "Allow?")
        assert "more question" not in seen
        first = re.findall(r"touch made-by-(job|turn)", seen)[0]
        second = "turn" if first == "job" else "job"
        os.write(master, b"maybe\n")  # not an answer: asked again, not sent to the brain
        read_until(master, "Please answer")
        os.write(master, b"y\n")
        shown = read_until(master, "She wants to run")  # the second question takes the first one's place
        shown += read_until(master, "Allow?", already=shown.rpartition("She wants to run")[2])
        assert f"touch made-by-{second}" in shown
        os.write(master, b"n\n")
        seen += shown  # the first answer's results may have been printed already
        while "Job finished." not in seen or "Both handled." not in seen:
            seen += read_until(master, "[say]")
        os.write(master, b"/quit\n")
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
        os.close(master)
    assert (workspace / f"made-by-{first}").exists()
    assert not (workspace / f"made-by-{second}").exists()
    messages = user_messages(scripted_brain)
    assert not {"y", "n", "maybe"} & set(messages)
