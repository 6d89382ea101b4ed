"""The real-audio tests under load: with COMPANION_TEST_HOG=1 another process keeps a core busy
while they run (`make test` sets it), so a test that only passes on a quiet machine fails here
rather than on a user's busy laptop or a shared CI runner.

Every test that uses the private PulseAudio (`pulse_audio`) is marked `real_audio` (a test that
talks in real time without it marks itself); select them
with `-m real_audio`. The hog is a Python busy loop in a child process, running for each
real-audio test only (the rest of the suite keeps both cores; no Debian package needed).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HOG_ENV = "COMPANION_TEST_HOG"


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "real_audio: plays and records through the private PulseAudio "
                            f"(run under a busy core when {HOG_ENV}=1)")


def pytest_collection_modifyitems(config, items) -> None:
    hog = os.environ.get(HOG_ENV) == "1"
    for item in items:
        real_time = item.get_closest_marker("real_audio") is not None  # a real-time microphone in process
        if "pulse_audio" not in getattr(item, "fixturenames", ()) and not real_time:
            continue
        item.add_marker(pytest.mark.real_audio)
        if hog:
            item.fixturenames.insert(0, "cpu_hog")


@pytest.fixture
def cpu_hog():
    """A process spinning on one core while the test runs; its pid."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()
