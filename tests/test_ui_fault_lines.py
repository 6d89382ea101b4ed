"""Faults are sentences in the window too: a tool server that won't start is one banner that
says what happened and how to fix it, with no trace anywhere the user looks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion.config import (
    McpServerSettings,
    McpSettings,
    Paths,
    RunConfig,
    Settings,
    with_overrides,
)
from companion.ui.app import CompanionApp

BROKEN_SERVER = Path(__file__).parent / "mcp_servers" / "broken_start.py"


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def test_an_mcp_server_that_exits_at_start_is_one_banner_saying_what_and_how_to_fix(
        qtbot, tmp_path, scripted_brain, qt_loop):
    from dataclasses import replace

    (tmp_path / "workspace").mkdir()
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")})
    server = McpServerSettings(name="notes", command=sys.executable, args=(str(BROKEN_SERVER), "exit"))
    settings = replace(settings, mcp=McpSettings(servers=(server,)))
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings), with_voice=False)
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        failed = signal_future(app.bridge.error)
        await app.start()
        return await failed

    try:
        stage, code, _sentence = qt_loop(scenario(), timeout=60)
        assert (stage, code) == ("tools", "mcp_down")
        banner = app.window.banners.banner("tools")
        assert banner is not None, app.window.banners.shown_keys()
        text = banner.label.text()
        assert "The MCP server 'notes'" in text and "NOTES_API_KEY is not set" in text
        assert "Settings → Toolsets" in text
        assert "Traceback" not in text + app.window.captions.toPlainText()
    finally:
        qt_loop(app.close())


def test_a_damaged_voice_file_is_one_banner_naming_it_and_the_fix_and_typing_still_works(
        qtbot, tmp_path, scripted_brain, qt_loop):
    from test_fault_lines import damaged_voice

    folder = damaged_voice(tmp_path / "config")
    (tmp_path / "workspace").mkdir()
    scripted_brain.push({"text": "[happy] Typed answers still work."})
    config = RunConfig(Paths.default(tmp_path / "config"),
                       with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                                      tools={"workspace": str(tmp_path / "workspace")},
                                      voice={"voice": "en_US-joe-medium"}))
    app = CompanionApp(config)
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        await app.start()
        await app.voice_started.wait()  # set once her voice is up, or has failed with a banner
        replied = signal_future(app.bridge.turn_finished)
        app.send_text("hello?")
        return await replied

    try:
        (text, _emotion, _interrupted) = qt_loop(scenario(), timeout=120)
        assert text == "Typed answers still work."
        banner = app.window.banners.banner("voice")
        assert banner is not None, app.window.banners.shown_keys()
        assert banner.label.text() == (
            "The downloaded voice file en_US-joe-medium.onnx is damaged (its checksum is wrong). "
            f"Delete {folder} and I'll download it again. Typing still works.")
    finally:
        qt_loop(app.close())
