"""`companion chat` in a subprocess against the scripted brain: the transcript, and failures without tracebacks."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from scripted_brain import user_texts


def chat(tmp_path: Path, url: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", url,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(workspace), *args]
    return subprocess.run(command, input=stdin or "", capture_output=True, text=True, timeout=60)


def test_a_turn_calling_search_files_shows_announce_focus_face_complete_and_reply_in_order(tmp_path, scripted_brain):
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "notes.txt").write_text("buy a needle and thread\n", encoding="utf-8")
    scripted_brain.push(
        {"tool_calls": [{"name": "search_files", "arguments": {"query": "needle"}}]},
        {"text": "[happy] It's in notes.txt."},
    )
    done = chat(tmp_path, scripted_brain.url, "--once", "where did I write about the needle?")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    announce = next(i for i, line in enumerate(lines) if line.startswith("[announce] "))
    assert lines[announce:] == [
        lines[announce],
        "[face] thinking (focus: search_files)",
        lines[announce + 2],
        "[face] happy (reply)",  # her face takes the reply's mood as its words come
        "[say] It's in notes.txt.",
    ]
    assert lines[announce + 2].startswith("[complete] ")
    tool_result = scripted_brain.bodies[1]["messages"][-1]
    assert tool_result["role"] == "tool" and "notes.txt" in tool_result["content"]
    # First run: her personality was copied into the (test) config dir.
    assert (tmp_path / "config" / "personality.md").is_file()


def test_lines_from_standard_input_are_one_conversation(tmp_path, scripted_brain):
    scripted_brain.push({"text": "[happy] Hi Sam!"}, {"text": "[neutral] You're Sam."})
    done = chat(tmp_path, scripted_brain.url, stdin="I'm Sam\n\nwho am I?\n")
    assert done.returncode == 0, done.stderr
    assert "[say] Hi Sam!" in done.stdout and "[say] You're Sam." in done.stdout
    assert "you>" not in done.stdout  # no prompt when input is not a terminal
    users = user_texts(scripted_brain.bodies[1])
    assert users == ["I'm Sam", "who am I?"]


def test_a_brain_that_is_down_prints_a_clear_line_and_no_traceback(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    done = chat(tmp_path, url, "--once", "hello?")
    assert done.returncode == 1
    assert f"[say] I can't reach my brain at {url}. Is the model server running at that address?" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_cut_stream_and_an_unknown_model_print_clear_lines(tmp_path, scripted_brain):
    scripted_brain.show = {"model_info": {}, "parameters": "", "capabilities": ["completion", "tools"]}  # Ollama
    scripted_brain.push({"cut": True, "text": "[happy] Let me tell you a long"}, {"error": "unknown_model"})
    done = chat(tmp_path, scripted_brain.url, "--model", "tiny:1b", stdin="tell me\nagain\n")
    assert "[say] My brain's connection dropped in the middle of my answer. Please ask me again." in done.stdout
    assert "ollama pull tiny:1b" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 1  # a script driving the chat learns that turns failed


def test_an_interactive_chat_after_one_failed_turn_exits_non_zero(tmp_path, scripted_brain):
    scripted_brain.push({"error": 500, "message": "boom"}, {"text": "[happy] Fine now."})
    done = chat(tmp_path, scripted_brain.url, stdin="first\nsecond\n")
    assert "[say] Fine now." in done.stdout
    assert done.returncode == 1
