"""Start at login as a new user meets it (issue 37): after `companion install-desktop --uninstall`
Settings' box is unticked for good, and two profiles (two --config-dir folders) each keep
their own autostart entry, from the command and from Settings alike."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.config import Paths, RunConfig, with_overrides
from companion.desktop_entry import Places
from companion.settings_file import load_settings


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _install(home: Path, profile: str, *args: str) -> None:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": "", "XDG_CONFIG_HOME": ""}
    env.pop("DISPLAY", None)
    done = subprocess.run([sys.executable, "-m", "companion.cli", "--config-dir", str(home / profile),
                           "install-desktop", *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _app(make_app, home: Path, profile: str, url: str):
    """Her window for `profile` as it starts from its saved settings, her places under `home`."""
    paths = Paths.default(home / profile)
    settings = with_overrides(load_settings(paths).settings, brain={"base_url": url},
                              tools={"workspace": str(home / "workspace")})
    app = make_app(RunConfig(paths, settings))
    app.desktop.places = Places.for_user({"HOME": str(home)}, config_dir=paths.config_dir)
    return app


def test_after_uninstall_the_settings_box_stays_unticked(make_app, tmp_path, scripted_brain, qt_loop):
    _install(tmp_path, "config", "--autostart")
    _install(tmp_path, "config", "--uninstall")
    app = _app(make_app, tmp_path, "config", scripted_brain.url)
    qt_loop(app.start())
    assert app.keeper.settings.ui.start_at_login is False  # saved so: not only hidden by a missing file
    app.open_settings("desktop")
    assert not app.settings_dialog.desktop.start_at_login.isChecked()
    app.settings_dialog.accept()
    assert not app.desktop.places.autostart_entry.exists()


def test_two_profiles_keep_their_own_autostart_entries_from_settings_too(make_app, tmp_path, scripted_brain,
                                                                          qt_loop):
    _install(tmp_path, "work", "--autostart")
    work = Places.for_user({"HOME": str(tmp_path)}, config_dir=tmp_path / "work").autostart_entry
    app = _app(make_app, tmp_path, "home", scripted_brain.url)
    qt_loop(app.start())
    mine = app.desktop.places.autostart_entry
    assert mine != work and work.is_file()
    app.open_settings("desktop")
    assert not app.settings_dialog.desktop.start_at_login.isChecked()  # work's entry is not hers
    app.settings_dialog.desktop.start_at_login.setChecked(True)
    app.settings_dialog.accept()
    assert mine.is_file() and f"--config-dir {app.config.paths.config_dir}" in mine.read_text()
    settings = app.keeper.settings
    app.keeper.apply(replace(settings, ui=replace(settings.ui, start_at_login=False)))
    assert not mine.exists() and work.is_file()
