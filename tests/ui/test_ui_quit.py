"""Ctrl-C in the terminal that started the window closes her as Quit does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib

import pytest


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_closes_the_window_cleanly_and_saves_its_geometry(tmp_path, unused_port, signum):
    output = run_and_signal(tmp_path, f"http://127.0.0.1:{unused_port}/v1", signum)
    assert "Traceback" not in output and "KeyboardInterrupt" not in output


def run_and_signal(tmp_path, brain_url: str, signum: int) -> str:
    """Start the window offscreen, signal it once the core is up; its output after it exits 0."""
    config = tmp_path / "config"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    app = subprocess.Popen(
        [sys.executable, "-m", "companion.cli", "--no-voice", "--config-dir", str(config),
         "--workspace", str(tmp_path / "work"), "--brain-url", brain_url],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        # The core copies her personality into the config dir once it has started.
        deadline = time.monotonic() + 60
        while not (config / "personality.md").exists():
            assert app.poll() is None, app.stdout.read()
            assert time.monotonic() < deadline, "the window never finished starting"
            time.sleep(0.1)
        app.send_signal(signum)
        output, _ = app.communicate(timeout=30)
    finally:
        if app.poll() is None:
            app.kill()
    assert app.returncode == 0, output
    saved = tomllib.loads((config / "settings.toml").read_text(encoding="utf-8"))
    assert saved["ui"]["geometry"]
    return output
