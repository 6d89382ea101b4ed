"""Her log: traces go to a rotating file, the terminal gets one line naming it, doctor says where."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from companion.config import Paths
from companion.doctor.machine import check_log
from companion.logs import LOG_NAME, MAX_BYTES, log_file


def run_logging(data_dir: Path, body: str, *args: str) -> subprocess.CompletedProcess:
    """A fresh process that sets her logging up as the CLI does, then runs `body`."""
    script = textwrap.dedent(f"""
        import logging, sys
        from pathlib import Path
        from companion.logs import setup_logging
        setup_logging(Path({str(data_dir)!r}), verbose="-v" in sys.argv)
        log = logging.getLogger("companion.test")
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60)


FAILURE = """
    try:
        raise ValueError("the server said something odd\\nsecond line of it")
    except ValueError:
        log.error("the widget broke", exc_info=True)
    log.warning("a warning for the file only")
"""


def test_an_error_is_one_line_on_the_terminal_naming_the_log_and_its_trace_is_in_the_file(tmp_path: Path) -> None:
    done = run_logging(tmp_path, FAILURE)
    path = tmp_path / LOG_NAME
    assert done.stderr.splitlines() == [f"companion: the widget broke (details: {path})"]
    written = path.read_text(encoding="utf-8")
    assert "Traceback" in written and "second line of it" in written
    assert "a warning for the file only" in written


def test_with_verbose_the_terminal_gets_everything_with_traces(tmp_path: Path) -> None:
    done = run_logging(tmp_path, FAILURE, "-v")
    assert "Traceback" in done.stderr and "a warning for the file only" in done.stderr


def test_the_log_rotates_and_keeps_three_older_files(tmp_path: Path) -> None:
    line = "x" * 1000
    run_logging(tmp_path, f"""
        for _ in range({MAX_BYTES * 5 // 1000}):
            log.warning({line!r})
    """)
    assert sorted(p.name for p in tmp_path.iterdir()) == [LOG_NAME, f"{LOG_NAME}.1", f"{LOG_NAME}.2", f"{LOG_NAME}.3"]
    assert all(p.stat().st_size <= MAX_BYTES for p in tmp_path.iterdir())


def test_a_log_that_cannot_be_written_costs_one_line_never_a_logging_traceback(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("in the way\n")
    done = run_logging(blocked, FAILURE)  # its folder is a file: the log can't be created
    assert "Logging error" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == ["companion: the widget broke", "companion: a warning for the file only"]


def test_the_log_lives_in_the_state_folder_or_beside_a_profiles_data(monkeypatch) -> None:
    from companion.paths import default_data_dir

    monkeypatch.delenv("XDG_STATE_HOME", raising=False)

    assert log_file(default_data_dir()) == Path.home() / ".local" / "state" / "companion" / LOG_NAME
    assert log_file(Path("/profiles/work/data")) == Path("/profiles/work/data") / LOG_NAME


def test_doctor_says_where_the_log_is_and_warns_when_it_cannot_be_written(tmp_path: Path) -> None:
    good = check_log(Paths(tmp_path / "config", tmp_path / "data"))
    assert good.ok and str(tmp_path / "data" / LOG_NAME) in good.detail
    (tmp_path / "blocked").write_text("a file where the folder should be\n")
    bad = check_log(Paths(tmp_path / "config", tmp_path / "blocked" / "data"))
    assert not bad.ok and not bad.essential and "can't be written" in bad.detail


def test_a_failure_nothing_caught_is_one_line_naming_the_log_with_its_trace_in_the_file(tmp_path: Path) -> None:
    done = run_logging(tmp_path, """
        import threading
        worker = threading.Thread(target=lambda: {}["missing key in a thread"])
        worker.start()
        worker.join()
        raise RuntimeError("the model file vanished")
    """)
    assert done.returncode == 1
    path = tmp_path / LOG_NAME
    assert done.stderr.splitlines() == [
        f"companion: something went wrong: 'missing key in a thread' (details: {path})",
        f"companion: something went wrong: the model file vanished (details: {path})",
    ]
    written = path.read_text(encoding="utf-8")
    assert written.count("Traceback") == 2 and "RuntimeError: the model file vanished" in written
