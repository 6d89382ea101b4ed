"""Faults are sentences: a real fault in `companion chat` is one line that says what happened
and how to fix it, and the full trace goes only to her log file, which the line names."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from audio_env import without_the_words_model
from broken_things import GARBAGE, answering_garbage, damaged_voice, write_settings
from places import FIXTURES, MCP_SERVERS

from companion.logs import LOG_NAME

BROKEN_SERVER = MCP_SERVERS / "broken_start.py"


def broken_servers_toml() -> str:
    entries = []
    for how, timeout in (("exit", 10), ("hang", 2), ("garbage", 2)):
        entries.append(f'[[mcp.servers]]\nname = "{how}"\ncommand = "{sys.executable}"\n'
                       f'args = ["{BROKEN_SERVER}", "{how}"]\ntimeout_s = {timeout}\n')
    return "\n".join(entries)


def start_chat(tmp_path: Path, url: str) -> subprocess.Popen:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", url,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(workspace)]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def read_until(child: subprocess.Popen, done, timeout_s: float = 60.0) -> str:
    """Read the child's output until `done(text)` (select waits on data; no sleeping)."""
    seen = b""
    fd = child.stdout.fileno()
    deadline = time.monotonic() + timeout_s
    while not done(seen.decode(errors="replace")):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError(f"gave up waiting; the chat showed:\n{seen.decode(errors='replace')}")
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        seen += chunk
    return seen.decode(errors="replace")


def test_mcp_servers_that_exit_hang_or_answer_garbage_at_start_are_one_line_each_with_the_trace_in_the_log(
        tmp_path: Path, scripted_brain) -> None:
    config = tmp_path / "config"
    write_settings(config, broken_servers_toml())
    child = start_chat(tmp_path, scripted_brain.url)
    try:
        shown = read_until(child, lambda text: text.count("[error] ") >= 3)
        child.stdin.close()
        shown += child.stdout.read().decode(errors="replace")
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
    errors = [line for line in shown.splitlines() if line.startswith("[error] ")]
    log = config / "data" / LOG_NAME
    for name in ("exit", "hang", "garbage"):
        (line,) = [e for e in errors if f"MCP server '{name}'" in e]
        assert "Settings → Toolsets" in line and f"The details are in {log}." in line
    (exited,) = [e for e in errors if "'exit'" in e]
    assert "NOTES_API_KEY is not set" in exited  # the server's own last words say what's wrong
    (hung,) = [e for e in errors if "'hang'" in e]
    assert "did not start within 2 seconds" in hung
    (garbled,) = [e for e in errors if "'garbage'" in e]
    assert 'answered "Welcome to notes-server 2.0! <html>", which is not MCP' in garbled
    assert "Traceback" not in shown and "ExceptionGroup" not in shown
    assert len(shown.splitlines()) == len(errors)  # nothing else was printed: no log lines
    trace = log.read_text(encoding="utf-8")
    assert "Traceback" in trace and "MCP server exit failed" in trace


@pytest.fixture
def garbage_server(request) -> Iterator[str]:
    with answering_garbage(request.param) as url:
        yield url


@pytest.mark.parametrize("garbage_server", sorted(GARBAGE), indirect=True)
def test_a_brain_that_answers_garbage_is_one_sentence_naming_it_and_the_fix(tmp_path: Path, garbage_server,
                                                                              request) -> None:
    (tmp_path / "workspace").mkdir()
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", garbage_server,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(tmp_path / "workspace"),
               "--once", "hello?"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    what = GARBAGE[request.node.callspec.params["garbage_server"]][2]
    assert done.returncode == 1  # the turn failed, and a script driving the chat learns it
    said = [line for line in done.stdout.splitlines() if line.startswith("[say] ")]
    assert said == [f"[say] My brain at {garbage_server} answered with {what}, not a chat reply. Check in "
                    "Settings → Brain that the address is an OpenAI-compatible server (it usually ends in /v1)."]
    assert "Traceback" not in done.stdout + done.stderr


QUESTION = FIXTURES / "audio" / "good_morning_whisper_repeats.wav"


def listen(tmp_path: Path, url: str) -> subprocess.CompletedProcess:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    command = [sys.executable, "-m", "companion.cli", "listen", "--in", str(QUESTION),
               "--out", str(tmp_path / "answer.wav"), "--brain-url", url,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(tmp_path / "workspace"),
               "--listening", "always"]
    # The faults are the point here, not where her turn ends: without the words' turn model,
    # ~4 s of processor cheaper (audio_env).
    return subprocess.run(command, capture_output=True, text=True, timeout=180, env=without_the_words_model())


def test_a_damaged_voice_file_is_one_line_naming_the_file_and_the_fix(tmp_path: Path, scripted_brain) -> None:
    folder = damaged_voice(tmp_path / "config")
    done = listen(tmp_path, scripted_brain.url)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "companion: The downloaded voice file en_US-joe-medium.onnx is damaged (its checksum is wrong). "
        f"Delete {folder} and I'll download it again."]
    assert "Traceback" not in done.stdout + done.stderr


@pytest.fixture
def garbage_wyoming() -> Iterator[str]:
    """A TCP server where her hearing and voice servers should be, answering like a web server."""
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                peer, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with peer:
                try:
                    peer.recv(65536)
                    peer.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>hi</html>\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    server.close()
    thread.join(timeout=5)


def test_hearing_and_voice_servers_that_answer_garbage_are_one_line_each_and_she_carries_on(
        tmp_path: Path, scripted_brain, garbage_wyoming: str) -> None:
    scripted_brain.push({"text": "[happy] Good morning to you too."})
    write_settings(tmp_path / "config", f'[voice]\nhearing = "{garbage_wyoming}"\nspeaking = "{garbage_wyoming}"\n')
    done = listen(tmp_path, scripted_brain.url)
    assert done.returncode == 0, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("[error]")]
    assert len(errors) == 2, done.stderr
    for which, setting in (("hearing", "voice.hearing"), ("voice", "voice.speaking")):
        (line,) = [e for e in errors if f"My {which} server at {garbage_wyoming}" in e]
        assert f'set {setting} to "local" in Settings → Voice' in line  # how to fix it
    assert "[heard] Good morning." in done.stdout and "[say] Good morning to you too." in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_microphone_that_is_not_there_is_one_line_and_she_carries_on_in_text(
        tmp_path: Path, scripted_brain, pulse_audio) -> None:
    scripted_brain.push({"text": "[happy] I can read you."})
    (tmp_path / "workspace").mkdir()
    command = [sys.executable, "-m", "companion.cli", "voice", "--input-device", "Studio Mic 3000",
               "--brain-url", scripted_brain.url, "--config-dir", str(tmp_path / "config"),
               "--workspace", str(tmp_path / "workspace")]
    done = subprocess.run(command, input="can you hear me?\n", capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0].startswith("companion: I can't open the microphone 'Studio Mic 3000'")
    assert done.stderr.splitlines()[0].endswith("I'll carry on in text: type to me instead.")
    assert "[say] I can read you." in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
