"""She always starts (issue 55): the core's imports never race another thread's through Qt's
import hook, and a start that fails anyway says so in the pill and keeps what was typed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from app_support import app_config, type_into
from PySide6.QtWidgets import QPushButton
from ui_loop import qt_loop_fixture, signal_future  # noqa: F401 (fixture)

from companion.ui import app_lifecycle
from companion.ui.imports import import_alone

RACE = Path(__file__).with_name("import_race.py")


def _start(how: list[str]) -> str:
    done = subprocess.run([sys.executable, str(RACE), *how], capture_output=True, text=True, timeout=180)
    return done.stdout.strip() or done.stderr.strip()[-2000:]


# Beside a thread that keeps importing, a start still failed 1 time in 10 in a loaded test run
# after the fix: that rate is measured by bench/start_imports.py, not asserted here.
def _starts(*runs: list[str]) -> list[str]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(_start, runs))


def test_the_core_imports_the_windows_way_even_when_another_thread_is_inside_qts_import_hook():
    # Without the fix every one of these failed: "cannot import name 'import_string' from
    # partially initialized module 'pydantic._internal._validators'".
    assert _starts(*[["--scripted"]] * 4) == ["started"] * 4


async def test_another_threads_import_waits_until_the_import_thread_is_done(tmp_path, monkeypatch):
    (tmp_path / "waiting_module.py").write_text("X = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "waiting_module", raising=False)
    imported = threading.Event()

    def other_thread() -> None:
        import waiting_module  # noqa: F401

        imported.set()

    other = threading.Thread(target=other_thread)

    def load() -> str:
        """What the other thread did while this one held the imports."""
        other.start()
        while not imported.wait(0.01):
            frame = sys._current_frames().get(other.ident)
            while frame is not None and frame.f_code.co_name != "held_import":
                frame = frame.f_back
            if frame is not None:
                return "waited"
        return "imported meanwhile"

    assert await import_alone(load) == "waited"
    await asyncio.to_thread(other.join, 10)
    assert imported.is_set()  # once the import thread is done, it goes on


@pytest.fixture
def failing_core_import(monkeypatch):
    """The core's import fails once (as the race made it), then works."""
    real = app_lifecycle._import_core
    calls = []

    def import_core():
        calls.append(1)
        if len(calls) == 1:
            raise ImportError("cannot import name 'import_string' from partially initialized module "
                              "'pydantic._internal._validators'")
        return real()

    monkeypatch.setattr(app_lifecycle, "_import_core", import_core)


def _asked(scripted_brain) -> list[str]:
    return [str(message.get("content")) for request in scripted_brain.requests
            for message in (request["body"] or {}).get("messages", []) if message.get("role") == "user"]


def test_a_failed_start_says_so_in_the_pill_and_keeps_what_was_typed_until_try_again_works(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop, failing_core_import):
    scripted_brain.push({"for": "hello", "text": "[happy] Hello there."})
    app = make_app(app_config(tmp_path, scripted_brain.url))
    window = app.window

    async def scenario():
        type_into(qtbot, app, "hello")  # typed while she starts
        await app.start()
        assert window.state_label.text() == "Couldn't start"
        assert window.face.expression == "sad"
        banner = window.banners.banner("core")
        assert banner is not None and "partially initialized" in banner.text()
        shown = window.captions.toPlainText()
        assert "hello" in shown and "I couldn't start, so this waits here" in shown
        type_into(qtbot, app, "are you there?")
        assert "are you there?" in window.captions.toPlainText()  # shown, not vanished
        assert window.state_label.text() == "Couldn't start"
        assert _asked(scripted_brain) == []

        answered = signal_future(app.bridge.turn_finished)
        try_again = next(button for button in banner.findChildren(QPushButton) if button.text() == "Try again")
        try_again.click()
        await answered

    qt_loop(scenario(), timeout=60)
    assert window.banners.banner("core") is None
    assert window.state_label.text() != "Couldn't start"
    assert "Hello there." in window.captions.toPlainText()
    assert any("hello" in text and "are you there?" in text for text in _asked(scripted_brain))
