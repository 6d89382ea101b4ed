"""Exit 0 when other work leaves most of the processor free, 1 when it does not.

`make test` runs its passes at once only on a free processor: there the pure and unprivileged
passes, at the lowest priority, take what the real-audio rooms leave idle. Beside other busy
work at normal priority they would get almost nothing, so there the passes run one after
another, as before, each at normal priority.
"""

from __future__ import annotations

import sys
import time

SAMPLE_S = 2.0
BUSIEST = 0.25
"""The share of all cores that other work may keep busy: a quarter is half a core of two."""


def _times() -> tuple[int, int]:
    """(all jiffies, idle ones) since boot, summed over the cores."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]  # idle and waiting for I/O


def busy_share(sample_s: float = SAMPLE_S) -> float:
    """The share of the processor in use over `sample_s`, from 0 to 1."""
    total, idle = _times()
    time.sleep(sample_s)
    total2, idle2 = _times()
    return 1 - (idle2 - idle) / max(total2 - total, 1)


def main() -> int:
    try:
        share = busy_share()
    except OSError:
        return 1  # no /proc/stat: not knowing, the careful order
    if share > BUSIEST:
        print(f"the processor is {share:.0%} busy with other work: the passes run one after another")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
