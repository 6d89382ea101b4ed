"""The listening mode in the window: her face dozes and wakes, Settings → Voice → Listening
saves the mode, the wake word, the window and the cue, and the tray's menu sets the mode."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import pytest
from PySide6.QtWidgets import QGroupBox
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion import events as ev
from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.settings_file import load_settings
from companion.tools.registry import Registry
from companion.ui.app import CompanionApp
from companion.ui.bridge import EventBridge
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.window import CompanionWindow


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture
def window(qtbot):
    window = CompanionWindow(push_to_talk_key="F8")
    qtbot.addWidget(window)
    window.bridge, window.bus = EventBridge(), ev.EventBus()
    window.bridge.attach(window.bus)
    window.connect_bridge(window.bridge)
    window.show()
    return window


def _emit(qtbot, window, event) -> None:
    with qtbot.waitSignal(window.bridge.event, timeout=2000, check_params_cb=lambda e: e is event):
        window.bus.emit(event)


def test_she_dozes_while_waiting_to_be_called_and_is_attentive_the_moment_she_is(window, qtbot):
    window.set_voice("ready")
    window.set_call_hint("\u201cMira\u201d or \u201cOkay Nabu\u201d")
    _emit(qtbot, window, ev.AttentionChanged("dozing"))
    assert window.state_label.text() == "Dozing: say \u201cMira\u201d or \u201cOkay Nabu\u201d"
    assert window.face.expression == "sleepy"

    _emit(qtbot, window, ev.AttentionChanged("attentive", "wake word"))
    assert window.state_label.text() == "Listening to you"
    assert window.face.animator.state == "listening" and window.face.expression != "sleepy"

    # Always answer: no dozing at all.
    _emit(qtbot, window, ev.AttentionChanged("awake"))
    assert window.state_label.text() == "Ready" and window.face.expression != "sleepy"


def dialog_for(qtbot, tmp_path, settings: Settings | None = None) -> SettingsDialog:
    dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path / "config"), settings or Settings()), Registry())
    qtbot.addWidget(dialog)
    return dialog


def test_fresh_settings_show_when_called_in_the_listening_section(qtbot, tmp_path):
    dialog = dialog_for(qtbot, tmp_path)  # held: a dialog collected mid-test takes its widgets with it
    rows = dialog.voice.listening
    assert rows.mode.currentText() == "When called" and rows.wake_word.isEnabled()
    assert rows.wake_word.currentData() == "okay_nabu" and rows.name_wakes.isChecked()


def test_the_listening_section_sits_after_devices_and_saves_what_it_shows(qtbot, tmp_path):
    dialog = dialog_for(qtbot, tmp_path, with_overrides(Settings(), voice={"listening": "always"}))
    titles = [box.title() for box in dialog.voice.findChildren(QGroupBox)]
    assert titles.index("Listening") == titles.index("Devices") + 1
    rows = dialog.voice.listening
    assert rows.mode.currentData() == "always" and not rows.wake_word.isEnabled()
    rows.mode.setCurrentIndex(rows.mode.findData("called"))
    assert rows.wake_word.isEnabled() and "nothing reaches her brain" in rows.note.text()
    rows.wake_word.setCurrentIndex(rows.wake_word.findData("hey_jarvis"))
    rows.follow_up.setValue(5)
    rows.cue.setCurrentIndex(rows.cue.findData("yes"))
    rows.name_wakes.setChecked(False)
    assert "only the wake-word detector runs" in rows.note.text()
    dialog.accept()
    saved = tomllib.loads((tmp_path / "config" / "settings.toml").read_text(encoding="utf-8"))["voice"]
    assert (saved["listening"], saved["wake_word"], saved["follow_up_s"], saved["called_cue"],
            saved["name_wakes"], saved["muted"]) == ("called", "hey_jarvis", 5.0, "yes", False, False)


def test_muted_in_the_listening_section_is_the_mute_switch_and_keeps_the_mode(qtbot, tmp_path):
    dialog = dialog_for(qtbot, tmp_path, with_overrides(Settings(), voice={"listening": "called"}))
    rows = dialog.voice.listening
    rows.mode.setCurrentIndex(rows.mode.findData("muted"))
    dialog.accept()
    voice = dialog.keeper.settings.voice
    assert voice.muted and voice.listening == "called" and voice.mode == "muted"


def test_the_tray_menu_sets_the_mode_and_follows_the_mute_button(qtbot, tmp_path, scripted_brain, qt_loop):
    paths = Paths.default(tmp_path / "config")
    paths.config_dir.mkdir(parents=True)
    # A settings file from before the listening modes: unmuted, no `listening` key.
    paths.settings_file.write_text(f'[brain]\nbase_url = "{scripted_brain.url}"\n'
                                   f'[tools]\nworkspace = "{tmp_path / "workspace"}"\n'
                                   '[voice]\nmuted = false\n', encoding="utf-8")
    app = CompanionApp(RunConfig(paths, load_settings(paths).settings), with_voice=False)
    qtbot.addWidget(app.window)
    app.show()
    try:
        tray = app.tray
        assert tray.mode_actions["called"].isChecked()  # the new default
        tray.mode_actions["always"].trigger()
        assert app.keeper.settings.voice.mode == "always" and tray.mode_actions["always"].isChecked()
        assert load_settings(paths).settings.voice.listening == "always"
        tray.mode_actions["called"].trigger()
        assert app.keeper.settings.voice.mode == "called" and tray.mode_actions["called"].isChecked()
        assert "Okay Nabu" in app.window.presence.facts.call_hint
        tray.mode_actions["muted"].trigger()
        assert app.window.mute_button.isChecked() and app.keeper.settings.voice.mode == "muted"
        app.window.mute_button.click()  # unmuted: back to When called
        assert app.keeper.settings.voice.mode == "called" and tray.mode_actions["called"].isChecked()
        # Muted chosen in Settings: the Mute button follows.
        app.keeper.apply(replace(app.keeper.settings, voice=app.keeper.settings.voice.with_mode("muted")))
        assert app.window.mute_button.isChecked() and tray.mode_actions["muted"].isChecked()
        app.keeper.apply(replace(app.keeper.settings, voice=app.keeper.settings.voice.with_mode("called")))
        assert not app.window.mute_button.isChecked() and tray.mode_actions["called"].isChecked()
    finally:
        qt_loop(app.close())
    assert load_settings(paths).settings.voice.listening == "called"
