"""Shared test setup. Qt must render offscreen: set before anything imports PySide6."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# tests/helpers/ holds helpers (the scripted brain) that tests and subprocesses import by file name.
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

import leaks  # noqa: E402

# Voice fixtures: the private PulseAudio and the real models, loaded once per session.
from audio_env import hearing, piper_voice, pulse_audio, turn_model, whisper_tiny  # noqa: E402, F401
from scripted_brain import ScriptedBrain  # noqa: E402
from wyoming_servers import wyoming_hearing, wyoming_voice  # noqa: E402, F401

# The real-audio tests run under a busy core when COMPANION_TEST_HOG=1 (tests/helpers/cpu_hog.py).
pytest_plugins = ["cpu_hog"]


@pytest.fixture(autouse=True)
def _nothing_outlives_the_test():
    """A test fails when it leaves a thread or a child process running (after a moment to end on
    its own). Session-scoped fixtures (the private PulseAudio, the shared models' threads, the
    Wyoming servers) start before this looks, so what they keep running is not counted."""
    threads, children = leaks.threads(), leaks.children()
    yield
    deadline = time.monotonic() + leaks.GRACE_S
    left = leaks.outliving_threads(threads, deadline) + leaks.outliving_children(children, deadline)
    if left:
        pytest.fail("left running after the test: " + "; ".join(left), pytrace=False)


@pytest.fixture(autouse=True)
def _logging_left_as_found():
    """A test that runs the command line in-process (cli.main sets up her log) leaves no handler
    writing to that test's captured, then closed, stderr: a later test's error would print
    logging's own "--- Logging error ---" traceback instead."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    hooks = sys.excepthook, threading.excepthook
    yield
    for handler in set(root.handlers) - set(handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    sys.excepthook, threading.excepthook = hooks


@pytest.fixture
def _function_scoped_runner(_function_scoped_runner):
    """pytest-asyncio's loop for one async test: a task still pending once the test and its
    fixtures are done fails the test (the runner would cancel it silently)."""
    yield _function_scoped_runner
    left = leaks.settle(_function_scoped_runner.get_loop())
    if left:
        pytest.fail("left running on the test's loop: " + "; ".join(leaks.describe_tasks(left)), pytrace=False)


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
