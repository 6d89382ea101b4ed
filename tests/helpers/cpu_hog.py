"""The real-audio tests under load, three rooms at a time.

With COMPANION_TEST_HOG=1 another process keeps a core busy for the whole run (`make
test-under-load` sets it), so a test that only passes on a quiet machine fails there rather than
on a user's busy laptop or a shared CI runner. One hog per run, started by the process that
leads it (pytest-xdist's controller, or pytest alone): under `-n 3` each real-audio test runs
beside the busy core and two other real-audio tests. `make test` runs the three rooms side by
side without it: each test already has two other real-time conversations beside it.

Every test that uses the private PulseAudio (`pulse_audio`) is marked `real_audio` (a test that
talks in real time without it marks itself); select them with `-m real_audio`. Each is put in
the xdist group of its room (`--dist loadgroup`, one worker a room): the sound room's tests
(devices, open speakers, speaker checks) share a worker of their own, fresh as her voice is when
it starts (after ~40 other voice sessions in one process her echo on the sound-server path leaked
at the start of a reply: docs/developing.md); the sound-server faults share another; every other
real-audio test shares the third. Each worker has its own PulseAudio (a session fixture), so the
rooms never hear each other.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HOG_ENV = "COMPANION_TEST_HOG"
SOUND_ROOM = Path(__file__).resolve().parent.parent / "voice" / "sound"

_hog: subprocess.Popen | None = None


ROOMS = ("sound-room", "sound-faults", "real-audio")


def pytest_addoption(parser) -> None:
    parser.addoption("--room", choices=ROOMS, help="only the real-audio tests of this room (one after "
                     "another in a fresh process: `make test-real-audio` on a busy machine, free_cpu.py)")


def pytest_configure(config) -> None:
    global _hog
    config.addinivalue_line("markers", "real_audio: plays and records through the private PulseAudio "
                            f"(run beside a busy core when {HOG_ENV}=1)")
    leads_the_run = not hasattr(config, "workerinput")
    if os.environ.get(HOG_ENV) == "1" and leads_the_run and _hog is None:
        _hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])


def pytest_unconfigure(config) -> None:
    global _hog
    if _hog is not None:
        _hog.kill()
        _hog.wait()
        _hog = None


def pytest_collection_modifyitems(config, items) -> None:
    room, elsewhere = config.getoption("--room"), []
    for item in items:
        real_time = item.get_closest_marker("real_audio") is not None  # a real-time microphone in process
        if "pulse_audio" not in getattr(item, "fixturenames", ()) and not real_time:
            elsewhere.append(item)
            continue
        item.add_marker(pytest.mark.real_audio)
        item.add_marker(pytest.mark.xdist_group(room_of(Path(item.path))))
        if room is not None and room_of(Path(item.path)) != room:
            elsewhere.append(item)
    if room is not None:
        # Only that room's tests (the others are no real-audio test, or another room's).
        config.hook.pytest_deselected(items=elsewhere)
        left_out = set(elsewhere)
        items[:] = [item for item in items if item not in left_out]


def room_of(path: Path) -> str:
    """The sound room splits in two: the sound-server faults (each test with a PulseAudio of its
    own to kill) and the devices, open speakers and speaker checks, each in a fresh process."""
    if not path.is_relative_to(SOUND_ROOM):
        return "real-audio"
    return "sound-faults" if path.name.startswith("test_faults_") else "sound-room"
