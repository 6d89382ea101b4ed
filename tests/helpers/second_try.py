"""Run a pass of the suite; if a few of its tests fail, run those once more, alone, and say so.

Many tests are real time (a microphone and a speaker that do not wait, Whisper racing her voice):
beside other work on a two-core machine one of ~2,000 sometimes misses its moment, a different one
each run. CI gets one try per submission, so `make test` gives such a test a second one, in a
fresh process with nothing beside it:

    python tests/helpers/second_try.py -q -n 3 -m "not real_audio"

(pytest's options only: the tests tried again are named by id). A test that fails twice fails the
pass. One that passes only the second time is named under "FLAKY", so the flake is seen and can be
chased, not hidden. More than MAX_RETRIED failures are no machine's pace but a break, and are not
tried again. This module is also the pytest plugin that writes down which tests failed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

MAX_RETRIED = 5
TESTS_FAILED = 1
"""pytest's exit code when tests ran and some failed (2 and up: interrupted, internal or usage errors)."""
FAILED_FILE = "COMPANION_SECOND_TRY_FAILED"
"""Where the plugin writes the id of each test that failed, one a line (an environment variable)."""


def pytest_runtest_logreport(report) -> None:
    """Any phase that failed (a test's call, or its setup or teardown as an error)."""
    if report.failed and (path := os.environ.get(FAILED_FILE)):
        with open(path, "a", encoding="utf-8") as failed:
            failed.write(report.nodeid + "\n")


def run(pytest_args: list[str], failed_file: Path) -> int:
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, FAILED_FILE: str(failed_file),
           "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "second_try", *pytest_args], env=env).returncode


def without_workers(pytest_args: list[str]) -> list[str]:
    """The pass's own arguments with pytest-xdist's worker count and distribution taken out."""
    kept, skip = [], False
    for arg in pytest_args:
        if skip:
            skip = False
        elif arg in ("-n", "--numprocesses", "--dist"):
            skip = True
        elif not arg.startswith(("-n=", "--numprocesses=", "--dist=")) and not (arg[:2] == "-n" and arg[2:].isdigit()):
            kept.append(arg)
    return kept


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    with tempfile.TemporaryDirectory(prefix="second-try-") as folder:
        first, again = Path(folder) / "first", Path(folder) / "again"
        code = run(args, first)
        if code != TESTS_FAILED:
            return code
        failed = list(dict.fromkeys(first.read_text(encoding="utf-8").splitlines())) if first.exists() else []
        if not failed or len(failed) > MAX_RETRIED:
            print(f"\n== {len(failed)} tests failed: more than {MAX_RETRIED} is a break, not the machine's pace; "
                  "not tried again ==", flush=True)
            return code
        print(f"\n== {len(failed)} failed; each once more, alone: {' '.join(failed)} ==", flush=True)
        code = run([*without_workers(args), "-rfEp", *failed], again)
        if code == 0:
            print(f"\n== FLAKY: failed in the pass, passed alone: {' '.join(failed)} ==", flush=True)
        return code


if __name__ == "__main__":
    sys.exit(main())
