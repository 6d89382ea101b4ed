"""How much of the processor is free now: whether the real-audio rooms fit side by side.

The three rooms are real time (a microphone and a speaker that do not wait): side by side they
keep ~1.3 of the two cores busy on a quiet machine. Beside other work (two busy loops, another
test run) they starved each other and failed 5-8 of 79 tests, in a different place each run; one
after another, each in a fresh process, they get the processor a conversation needs. `make
test-real-audio` asks this script which:

    python tests/helpers/free_cpu.py --enough 1.5     # exit 0: side by side; 1: one after another
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

STAT = Path("/proc/stat")
SAMPLE_S = 2.0


def cpu_times(stat: str) -> tuple[int, int]:
    """(idle, total) jiffies from /proc/stat's first line (iowait counts as idle: it waits, it
    does not use the processor)."""
    fields = [int(value) for value in stat.splitlines()[0].split()[1:]]
    return fields[3] + fields[4], sum(fields[:8])  # up to steal; guest time is already in user


def free_cores(before: str, after: str, cpus: int) -> float:
    """Cores left idle between two readings of /proc/stat."""
    (idle0, total0), (idle1, total1) = cpu_times(before), cpu_times(after)
    return cpus * (idle1 - idle0) / max(1, total1 - total0)


def measure(sample_s: float = SAMPLE_S) -> float:
    before = STAT.read_text()
    time.sleep(sample_s)  # the processor's use over a moment: there is nothing to wait on
    return free_cores(before, STAT.read_text(), os.cpu_count() or 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--enough", type=float, required=True, help="cores that must be free")
    args = parser.parse_args(argv)
    free = measure()
    fits = free >= args.enough
    print(f"{free:.1f} of {os.cpu_count()} cores free: the real-audio rooms run "
          + ("side by side" if fits else "one after another"), file=sys.stderr)
    return 0 if fits else 1


if __name__ == "__main__":
    sys.exit(main())
