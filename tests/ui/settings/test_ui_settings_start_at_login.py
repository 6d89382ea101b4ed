"""Settings → Desktop's "Start her when I log in" refuses a launcher that cannot work, with the
sentence `companion install-desktop` says, instead of writing a broken autostart entry."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.desktop_entry import Places

# A line break in the settings folder's name would put a second Exec= line in the entry.
CROOKED = "cfg\nExec=sh -c 'touch /tmp/owned'\n"


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _app(make_app, home: Path, profile: str, url: str):
    paths = Paths.default(home / profile)
    settings = with_overrides(Settings(), brain={"base_url": url}, tools={"workspace": str(home / "workspace")})
    app = make_app(RunConfig(paths, settings))
    app.desktop.places = Places.for_user({"HOME": str(home)}, config_dir=paths.config_dir)
    return app


def test_a_settings_folder_with_a_line_break_makes_the_start_at_login_box_say_why_it_cannot_be_ticked(
        make_app, tmp_path, scripted_brain, qt_loop):
    app = _app(make_app, tmp_path, CROOKED, scripted_brain.url)
    qt_loop(app.start())
    app.open_settings("desktop")
    desktop = app.settings_dialog.desktop
    assert not desktop.start_at_login.isEnabled() and not desktop.start_at_login.isChecked()
    assert not desktop.refusal.isHidden()
    assert "control or hidden character" in desktop.refusal.text() and "cfg\\nExec=" in desktop.refusal.text()
    desktop.start_at_login.setChecked(True)  # ticked anyway (by a script, say): still not on
    app.settings_dialog.accept()
    assert app.keeper.settings.ui.start_at_login is False
    assert list(tmp_path.rglob("*.desktop")) == []


def test_start_at_login_switched_on_for_a_launcher_that_cannot_work_writes_nothing_and_says_why(
        make_app, tmp_path, scripted_brain, qt_loop):
    app = _app(make_app, tmp_path, CROOKED, scripted_brain.url)
    qt_loop(app.start())
    settings = app.keeper.settings
    app.keeper.apply(replace(settings, ui=replace(settings.ui, start_at_login=True)))  # settings.toml, say
    assert list(tmp_path.rglob("*.desktop")) == []
    banner = app.window.banners.banner("autostart")
    assert banner is not None and "control or hidden character" in banner.text()


def test_an_ordinary_settings_folder_leaves_the_box_free_and_ticking_it_writes_the_entry(
        make_app, tmp_path, scripted_brain, qt_loop):
    app = _app(make_app, tmp_path, "config", scripted_brain.url)
    qt_loop(app.start())
    app.open_settings("desktop")
    desktop = app.settings_dialog.desktop
    assert desktop.start_at_login.isEnabled() and desktop.refusal.isHidden()
    desktop.start_at_login.setChecked(True)
    app.settings_dialog.accept()
    assert app.desktop.places.autostart_entry.exists()
