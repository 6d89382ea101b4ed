"""How often the window's start-up imports fail beside a thread that keeps importing (issue 55).

Each start is a fresh process (tests/ui/import_race.py): Qt's import hook active, the core
imported the window's way while another thread imports fresh modules in a tight loop. Prints
{"starts", "failed", "first_error"}. A measure, not a test: the race is rare and its rate
depends on the machine's load (1 start in 10 failed beside a loaded test run after the fix).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

RACE = Path(__file__).resolve().parent.parent / "tests" / "ui" / "import_race.py"


def start() -> str:
    done = subprocess.run([sys.executable, str(RACE)], capture_output=True, text=True, timeout=180)
    return done.stdout.strip() or done.stderr.strip()[-500:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=40)
    args = parser.parse_args()
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda _i: start(), range(args.starts)))
    failed = [o for o in outcomes if o != "started"]
    print(json.dumps({"starts": len(outcomes), "failed": len(failed), "first_error": failed[0] if failed else None}))


if __name__ == "__main__":
    main()
