"""Faults are sentences in the window too: a tool server that won't start is one banner that
says what happened and how to fix it, with no trace anywhere the user looks."""

from __future__ import annotations

import asyncio
import sys

import pytest
from places import MCP_SERVERS
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

BROKEN_SERVER = MCP_SERVERS / "broken_start.py"


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def test_mcp_servers_that_fail_at_start_are_one_banner_each_saying_what_and_how_to_fix(
        qtbot, tmp_path, scripted_brain, qt_loop):
    from dataclasses import replace

    (tmp_path / "workspace").mkdir()
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")})
    servers = tuple(McpServerSettings(name=how, command=sys.executable, args=(str(BROKEN_SERVER), how),
                                      timeout_s=3.0) for how in ("exit", "garbage"))
    settings = replace(settings, mcp=McpSettings(servers=servers))
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings), with_voice=False)
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        failures: list[tuple[str, str, str]] = []
        both = asyncio.get_running_loop().create_future()

        def failed(*error: str) -> None:
            failures.append(error)
            if len(failures) == 2 and not both.done():
                both.set_result(failures)

        app.bridge.error.connect(failed)
        await app.start()
        return await both

    try:
        failures = qt_loop(scenario(), timeout=60)
        assert {(stage, code) for stage, code, _ in failures} == {("tools", "mcp_down")}
        texts = [app.window.banners.banner(key).label.text() for key in app.window.banners.shown_keys()
                 if key.startswith("tools:")]
        assert len(texts) == 2, app.window.banners.shown_keys()  # the second never hides the first
        (exited,) = [t for t in texts if "The MCP server 'exit'" in t]
        assert "NOTES_API_KEY is not set" in exited and "Settings → Toolsets" in exited
        (garbled,) = [t for t in texts if "The MCP server 'garbage'" in t]
        assert "which is not MCP" in garbled
        assert "Traceback" not in " ".join(texts) + app.window.captions.toPlainText()
    finally:
        qt_loop(app.close())


def test_a_brain_that_answers_with_a_web_page_is_a_banner_with_the_fix_and_the_pill_says_so(
        qtbot, tmp_path, qt_loop):
    from broken_things import answering_garbage

    with answering_garbage("html") as url:
        _a_turn_against_a_garbage_brain(qtbot, tmp_path, qt_loop, url)


def _a_turn_against_a_garbage_brain(qtbot, tmp_path, qt_loop, url: str) -> None:
    (tmp_path / "workspace").mkdir()
    settings = with_overrides(Settings(), brain={"base_url": url}, tools={"workspace": str(tmp_path / "workspace")})
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings), with_voice=False)
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        await app.start()
        finished = signal_future(app.bridge.turn_finished)
        app.send_text("hello?")
        await finished

    try:
        qt_loop(scenario(), timeout=60)
        banner = app.window.banners.banner("brain")
        assert banner is not None, app.window.banners.shown_keys()
        assert banner.label.text() == (f"Something answers at {url}, but not as a chat server. The URL usually "
                                       "ends in /v1; fix it in Settings → Brain.")
        assert "wrong brain URL" in app.window.state_label.text()
        assert f"My brain at {url} answered with a web page, not a chat reply." in app.window.captions.toPlainText()
    finally:
        qt_loop(app.close())


def test_a_damaged_voice_file_is_one_banner_naming_it_and_the_fix_and_typing_still_works(
        qtbot, tmp_path, scripted_brain, qt_loop):
    from broken_things import damaged_voice

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
