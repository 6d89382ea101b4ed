"""Beyond the window as a new user meets it (issue 37): the tray under --no-voice, the
autostart box after an uninstall, and the shipped personalities' own words."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from app_support import app_config
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.config import with_overrides
from companion.desktop_entry import Places
from companion.persona.store import shipped_templates


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def test_under_no_voice_the_tray_offers_neither_mute_nor_a_listening_mode(
        tmp_path, scripted_brain, make_app, qt_loop):
    app = make_app(app_config(tmp_path, scripted_brain.url))  # make_app builds with_voice=False
    qt_loop(app.start())
    tray = app.tray
    shown = [action.text() for action in tray.menu.actions() if action.isVisible()]
    assert "Mute microphone" not in shown and "Listening mode" not in shown
    assert "Quit" in shown


def test_after_install_desktop_uninstall_the_settings_box_no_longer_says_she_starts_at_login(
        tmp_path, scripted_brain, make_app, qt_loop):
    config = app_config(tmp_path, scripted_brain.url)
    config = replace(config, settings=with_overrides(config.settings, ui={"start_at_login": True}))
    app = make_app(config)
    app.desktop.places = Places.for_user({"HOME": str(tmp_path / "home")})  # no autostart entry there
    qt_loop(app.start())
    app.open_settings("desktop")
    assert not app.settings_dialog.desktop.start_at_login.isChecked()
    app.settings_dialog.accept()
    assert app.keeper.settings.ui.start_at_login is False


def test_the_shipped_personalities_never_ask_to_copy_a_file_over_yours():
    for name, path in shipped_templates().items():
        text = path.read_text(encoding="utf-8").lower()
        assert "copy this file" not in text, name
        assert "personality.md" not in text, name


def test_every_pill_the_window_can_show_is_in_the_user_guides_pill_table_and_the_readme_links_it():
    from itertools import product

    from companion.ui.presence import Facts, look

    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "user-guide.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in guide.splitlines() if line.startswith("| "))
    pills = {look(Facts(core=core, voice=voice, attention=attention, tool=tool, waiting=waiting,
                        replying=replying, push_to_talk=ptt, started=started, muted=muted,
                        call_hint="“Mira” or “Okay Nabu”")).text
             for core, voice, attention, tool, waiting, replying, ptt, started, muted in product(
                 ("idle", "listening", "thinking", "working", "speaking", "offline"), ("none", "loading", "ready"),
                 ("awake", "dozing", "attentive"), ("", "search_files"), (False, True), (False, True),
                 (False, True), (False, True), (False, True))}
    missing = sorted(pill for pill in pills if pill.split(":")[0].split(" 4")[0] not in table)
    assert missing == []
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "user-guide.md" in readme and "no global hotkey" not in readme.lower()
    assert "no global hotkey" not in (root / "docs" / "troubleshooting.md").read_text(encoding="utf-8").lower()
