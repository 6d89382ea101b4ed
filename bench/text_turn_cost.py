"""The words' turn model's memory and cost per check: resident memory after loading, the
weights' bytes, and the processor time of each check as a transcript grows pause by pause.

    .venv/bin/python bench/text_turn_cost.py [--code DIR]

`--code` measures another checkout's companion package (e.g. a `git worktree` of an older
commit) with the same script. Run each in its own process: resident memory is the process's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

GROWING = (
    "Could you", "Could you read me", "Could you read me the first chapter again?",
    "Thomas Piketty, in his book,", "Thomas Piketty, in his book, says that capital grows faster.",
    "Ten of clubs.", "What is the weather going to be like in", "What is the weather going to be like in London?",
    "Set an alarm for", "Set an alarm for seven thirty tomorrow morning.", "Lights off.", "I was wondering",
    "I was wondering if you could help me plan a trip.",
)
"""Transcripts in the order a session would meet them: a grown one reuses its prefix's cache."""


def rss_mb() -> tuple[float, float]:
    """(resident now, peak) in MB."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def weight_bytes(model) -> int:
    total = 0
    for value in vars(model).values():
        items = value if isinstance(value, list) else [value]
        for item in items:
            for part in ([item] if not hasattr(item, "__dict__") else vars(item).values()):
                total += getattr(part, "nbytes", 0)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    from companion.voice.turns.text_turn import TextTurn, resolve_text_model

    before = rss_mb()[0]
    started = time.perf_counter()
    model = TextTurn(resolve_text_model())
    model.load()
    loaded_s = time.perf_counter() - started
    after, peak = rss_mb()
    costs = []
    for _ in range(args.rounds):
        model._cached = list(model._prompt)  # each round starts from the prompt alone (cached since the warm-up)
        model._cache.keep(len(model._prompt))
        for words in GROWING:
            model._last = None
            costs.append(model.probability_sync(words).cpu_ms)
    print(json.dumps({
        "code": str(args.code), "load_average": [round(x, 2) for x in os.getloadavg()],
        "rss_mb": {"before_load": round(before), "after_load": round(after), "peak": round(peak),
                   "model": round(after - before)},
        "weights_mb": round(weight_bytes(model._model) / 2**20),
        "load_s": round(loaded_s, 1),
        "check_cpu_ms": {"median": round(statistics.median(costs), 1),
                         "p95": round(sorted(costs)[int(0.95 * (len(costs) - 1))], 1), "checks": len(costs)},
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
