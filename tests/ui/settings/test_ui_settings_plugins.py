"""Settings → Toolsets lists each plugin found, off and with its file, until the user enables it;
enabling is a Settings change: Cancel imports nothing, Save imports it at once."""

from __future__ import annotations

import tomllib

import pytest
from app_support import app_config
from PySide6.QtCore import Qt
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

PLUGIN = """
import pathlib
pathlib.Path({marker!r}).write_text("imported")
SCHEMA = {{"type": "function", "name": "plugged_in", "description": "A tool from a plugin."}}


async def execute(args, ctx):
    return "from the plugin"
"""


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def test_a_plugin_found_at_start_is_shown_off_with_its_file_and_loads_only_when_enabled_and_saved(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):  # noqa: F811 (fixture)
    config = app_config(tmp_path, scripted_brain.url)
    plugins = config.paths.data_dir / "plugins"
    plugins.mkdir(parents=True)
    marker = tmp_path / "imported.marker"
    (plugins / "gadget.py").write_text(PLUGIN.format(marker=str(marker)))
    app = make_app(config)
    qt_loop(app.start())
    registry = app.companion.registry
    assert not marker.exists() and registry.dispatchable("plugged_in") is None

    app.open_settings()
    row = app.settings_dialog.toolsets.families["plugin:gadget"]
    assert row.checkState(0) == Qt.CheckState.Unchecked
    assert row.text(1) == (f"plugin, off: never loaded until you tick it and press Save ({plugins / 'gadget.py'})")
    row.setCheckState(0, Qt.CheckState.Checked)
    app.settings_dialog.reject()  # Cancel: nothing imported, nothing saved
    assert not marker.exists() and not config.paths.settings_file.exists()

    app.open_settings()
    app.settings_dialog.toolsets.families["plugin:gadget"].setCheckState(0, Qt.CheckState.Checked)
    app.settings_dialog.accept()
    assert marker.read_text() == "imported"
    assert registry.dispatchable("plugged_in") is not None
    saved = tomllib.loads(config.paths.settings_file.read_text(encoding="utf-8"))
    assert saved["tools"]["enabled_plugins"] == ["plugin:gadget"]
    assert "plugin:gadget" not in saved["tools"]["disabled_toolsets"]

    app.open_settings()
    row = app.settings_dialog.toolsets.families["plugin:gadget"]
    assert row.text(1) == f"plugin, 1 tool ({plugins / 'gadget.py'})"
    row.setCheckState(0, Qt.CheckState.Unchecked)
    app.settings_dialog.accept()
    assert registry.dispatchable("plugged_in") is None
