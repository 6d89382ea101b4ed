"""Settings → Toolsets: a switch per MCP server marks it trusted (its tools run without asking);
off by default, saved in settings.toml, and Cancel forgets it."""

from __future__ import annotations

import sys
import tomllib
from dataclasses import replace

import pytest
from app_support import app_config
from places import MCP_SERVERS
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.config import McpServerSettings, McpSettings
from companion.ui.settings.mcp_server_form import McpServerForm, McpTrustSwitches

NOTES_SERVER = MCP_SERVERS / "notes_server.py"


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def notes(trusted: bool = False) -> McpServerSettings:
    return McpServerSettings(name="notes", command=sys.executable, args=(str(NOTES_SERVER),), trusted=trusted)


def test_a_new_server_is_untrusted_unless_the_form_says_so(qtbot) -> None:
    form = McpServerForm(set())
    qtbot.addWidget(form)
    form.name.setText("notes")
    form.command.setText(f"{sys.executable} {NOTES_SERVER}")
    assert not form.trusted.isChecked()
    form.accept()
    assert form.server is not None and form.server.trusted is False
    form = McpServerForm(set())
    qtbot.addWidget(form)
    form.name.setText("notes")
    form.command.setText(f"{sys.executable} {NOTES_SERVER}")
    form.trusted.setChecked(True)
    form.accept()
    assert form.server is not None and form.server.trusted is True


def test_the_switches_show_and_apply_each_servers_trust(qtbot) -> None:
    other = replace(notes(True), name="other")
    switches = McpTrustSwitches((notes(), other))
    qtbot.addWidget(switches)
    assert not switches.switches["notes"].isChecked() and switches.switches["other"].isChecked()
    switches.switches["notes"].setChecked(True)
    switches.switches["other"].setChecked(False)
    assert [s.trusted for s in switches.applied((notes(), other))] == [True, False]


def test_trusting_a_declared_server_in_settings_is_saved_and_cancel_forgets_it(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):  # noqa: F811 (fixture)
    config = app_config(tmp_path, scripted_brain.url)
    config = type(config)(config.paths, replace(config.settings, mcp=McpSettings(servers=(notes(),))))
    app = make_app(config)
    qt_loop(app.start())
    app.open_settings()
    switch = app.settings_dialog.mcp_trust.switches["notes"]
    assert not switch.isChecked()
    switch.setChecked(True)
    app.settings_dialog.reject()
    assert app.companion.settings.mcp.servers[0].trusted is False

    app.open_settings()
    assert not app.settings_dialog.mcp_trust.switches["notes"].isChecked()
    app.settings_dialog.mcp_trust.switches["notes"].setChecked(True)
    app.settings_dialog.accept()
    saved = tomllib.loads(app.config.paths.settings_file.read_text(encoding="utf-8"))
    assert saved["mcp"]["servers"][0]["trusted"] is True
    assert app.companion.settings.mcp.servers[0].trusted is True
