"""The real-audio rooms of `make test-real-audio`: how much of the processor is free decides
whether they run side by side, and each room run alone holds exactly its own tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from free_cpu import free_cores

ROOT = Path(__file__).resolve().parents[1]


def stat(user: int, nice: int, system: int, idle: int, iowait: int) -> str:
    return f"cpu  {user} {nice} {system} {idle} {iowait} 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"


def test_free_cores_are_the_idle_and_waiting_share_of_the_time_between_two_readings():
    before = stat(1000, 0, 100, 5000, 10)
    # Two cores over 200 jiffies: 100 busy (two busy loops would be 200), 90 idle, 10 waiting.
    after = stat(1080, 10, 110, 5090, 20)
    assert free_cores(before, after, cpus=2) == 1.0
    assert free_cores(before, stat(1180, 0, 120, 5000, 10), cpus=2) == 0.0


def collected(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", "real_audio", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_sound_faults_room_alone_collects_its_tests_and_no_other_rooms():
    # The sound room's folder holds two rooms (its devices and open speakers, its faults).
    everything = collected("tests/voice/sound")
    faults = collected("tests/voice/sound", "--room", "sound-faults")
    assert faults and set(faults) < set(everything)
    assert all(test.startswith("tests/voice/sound/test_faults_") for test in faults), faults
    assert [test for test in everything if test.startswith("tests/voice/sound/test_faults_")] == faults
