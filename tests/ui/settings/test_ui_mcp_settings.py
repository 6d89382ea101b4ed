"""Settings → Toolsets: an MCP server declared in the form starts on Save (Cancel forgets it),
and each MCP family says whether its server is running."""

from __future__ import annotations

import asyncio
import shlex
import sys
import tomllib

import pytest
from app_support import app_config
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.ui.settings.mcp_server_form import McpServerForm

TIME_SERVER = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def filled_form(name: str, command: str = TIME_SERVER, url: str = "", taken: set[str] = frozenset()) -> McpServerForm:
    form = McpServerForm(set(taken))
    form.name.setText(name)
    form.command.setText(command)
    form.url.setText(url)
    form.accept()
    return form


async def until(condition, timeout: float = 30.0) -> None:
    async def loop() -> None:
        while not condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(loop(), timeout)


def test_a_server_added_in_settings_starts_on_save_and_cancel_forgets_it(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):  # noqa: F811 (fixture)
    app = make_app(app_config(tmp_path, scripted_brain.url))
    qt_loop(app.start())
    app.open_settings()
    app.settings_dialog.add_mcp_server(filled_form("time"))
    assert "mcp:time" in app.settings_dialog.toolsets.families
    app.settings_dialog.reject()
    assert app.companion.mcp is None and not app.config.paths.settings_file.exists()

    app.open_settings()
    assert "mcp:time" not in app.settings_dialog.toolsets.families
    app.settings_dialog.add_mcp_server(filled_form("time"))
    app.settings_dialog.accept()
    saved = tomllib.loads(app.config.paths.settings_file.read_text(encoding="utf-8"))
    assert saved["mcp"]["servers"][0]["name"] == "time"
    assert saved["mcp"]["servers"][0]["args"][-2:] == ["--local-timezone", "UTC"]
    registry = app.companion.registry
    qt_loop(until(lambda: registry.dispatchable("get_current_time") is not None, 60), 70)

    app.open_settings()
    row = app.settings_dialog.toolsets.families["mcp:time"]
    assert row.text(1) == "MCP server running · 2 tools"
    assert {row.child(i).text(0) for i in range(row.childCount())} == {"convert_time", "get_current_time"}
    app.settings_dialog.reject()


def test_the_form_says_what_is_wrong_and_adds_nothing():
    form = filled_form("Bad Name")
    assert form.server is None and "lower-case" in form.error.text()
    form = filled_form("web", command="", url="")
    assert form.server is None and "either a command" in form.error.text()
    form = filled_form("time", taken={"time"})
    assert form.server is None and "already a server called 'time'" in form.error.text()
    form = filled_form("quoted", command="server 'unclosed")
    assert form.server is None and "quotes" in form.error.text()
    form = filled_form("browser", command="", url="http://127.0.0.1:8931/mcp")
    assert form.server is not None and form.server.url == "http://127.0.0.1:8931/mcp"
