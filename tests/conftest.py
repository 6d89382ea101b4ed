"""Shared test setup. Qt must render offscreen: set before anything imports PySide6."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# tests/helpers/ holds helpers (the scripted brain) that tests and subprocesses import by file name.
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

# Voice fixtures: the private PulseAudio and the real models, loaded once per session.
from audio_env import hearing, piper_voice, pulse_audio, turn_model, whisper_tiny  # noqa: E402, F401
from scripted_brain import ScriptedBrain  # noqa: E402
from wyoming_servers import wyoming_hearing, wyoming_voice  # noqa: E402, F401

# The real-audio tests run under a busy core when COMPANION_TEST_HOG=1 (tests/helpers/cpu_hog.py).
pytest_plugins = ["cpu_hog"]


@pytest.fixture
def scripted_brain():
    """A scripted OpenAI-compatible server on 127.0.0.1: `.push(reply)`, `.url`, `.bodies`."""
    with ScriptedBrain() as brain:
        yield brain


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
