"""`make test`'s second try: a test that fails in a pass is run once more, alone, and named FLAKY
when it then passes; one that fails again fails the pass; many failures are not tried again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SECOND_TRY = Path(__file__).resolve().parent / "helpers" / "second_try.py"


def second_try(folder: Path, test_file: str, *pytest_args: str) -> subprocess.CompletedProcess:
    (folder / "test_sample.py").write_text(test_file, encoding="utf-8")
    return subprocess.run([sys.executable, str(SECOND_TRY), "-q", "-p", "no:cacheprovider", *pytest_args],
                          cwd=folder, capture_output=True, text=True, timeout=120)


def test_a_test_that_fails_once_passes_alone_and_is_named_flaky(tmp_path):
    run = second_try(tmp_path, (
        "import pathlib\n"
        "import pytest\n"
        "@pytest.mark.parametrize('kind', ['a moment missed'])\n"
        "def test_once(kind):\n"
        "    tried = pathlib.Path('tried')\n"
        "    first = not tried.exists()\n"
        "    tried.touch()\n"
        "    assert not first, kind\n"
        "def test_steady():\n"
        "    pass\n"), "-n", "2")

    assert run.returncode == 0, run.stdout
    assert "== FLAKY: failed in the pass, passed alone: test_sample.py::test_once[a moment missed] ==" in run.stdout
    second = run.stdout.split("each once more, alone")[1]
    assert "PASSED test_sample.py::test_once[a moment missed]" in second
    assert "1 passed" in second and "test_steady" not in second  # that test alone


def test_a_test_that_fails_twice_fails_the_pass(tmp_path):
    run = second_try(tmp_path, "def test_broken():\n    assert False\n")

    assert run.returncode == 1
    assert "each once more, alone: test_sample.py::test_broken" in run.stdout
    assert "FLAKY" not in run.stdout


def test_more_failures_than_a_busy_machine_makes_are_not_tried_again(tmp_path):
    run = second_try(tmp_path, "import pytest\n@pytest.mark.parametrize('n', range(6))\n"
                               "def test_broken(n):\n    assert False\n")

    assert run.returncode == 1
    assert "6 tests failed: more than 5 is a break" in run.stdout
    assert run.stdout.count("6 failed") == 1  # one run, not two
