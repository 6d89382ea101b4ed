"""Settings says, where her name and wake word are chosen, when her hearing does not reliably
catch one of her names: which name, how it was heard and what to do; nothing when every name
is heard well or when she is not listening for her name."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_support import app_config
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.config import Paths, Settings
from companion.events import NameHeard, NamesHeard
from companion.settings_file import settings_from_dict
from companion.tools.registry import Registry
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper

CALLED = replace(Settings(), voice=settings_from_dict({"voice": {"listening": "called"}}).voice)
ALWAYS = replace(Settings(), voice=settings_from_dict({"voice": {"listening": "always"}}).voice)
MIRA = NameHeard("Mira", ("Mirror",) * 7, 7, True)
PIP = NameHeard("Pip", ("Babe", "Tep", "Pip", "", "Deep", "Tep", "Pip"), 2, False)


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _dialog(qtbot, tmp_path, settings: Settings = CALLED, **kwargs) -> SettingsDialog:
    dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), settings), Registry(), **kwargs)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_tab("voice")
    qtbot.waitExposed(dialog)
    return dialog


def _line(dialog: SettingsDialog) -> str:
    """The warning as the user sees it ("" when it is not shown)."""
    label = dialog.voice.listening.unheard
    return label.text() if label.isVisibleTo(dialog) else ""


def test_a_name_her_hearing_does_not_catch_is_named_with_how_it_was_heard_and_what_to_do(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path, names_heard=NamesHeard((MIRA, PIP)))
    line = _line(dialog)
    assert "\u201cPip\u201d is heard in 2 of 7 voices (written \u201cBabe\u201d, \u201cTep\u201d," in line
    assert "she may not wake" in line and "Mira" not in line  # a name heard well is not complained of
    assert "alias" in line and "front matter" in line and "\u201cOkay Nabu\u201d" in line


def test_no_line_shows_when_every_name_is_heard_well_or_before_anything_was_learned(qtbot, tmp_path):
    assert _line(_dialog(qtbot, tmp_path, names_heard=NamesHeard((MIRA,)))) == ""
    assert _line(_dialog(qtbot, tmp_path)) == ""


def test_the_line_goes_when_she_is_not_listening_for_her_name_and_follows_the_wake_word_chosen(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path, names_heard=NamesHeard((PIP,)))
    rows = dialog.voice.listening
    rows.wake_word.setCurrentIndex(rows.wake_word.findData("hey_jarvis"))
    assert "\u201cHey Jarvis\u201d" in _line(dialog)
    rows.name_wakes.setChecked(False)
    assert _line(dialog) == ""
    rows.name_wakes.setChecked(True)
    rows.mode.setCurrentIndex(rows.mode.findData("always"))
    assert _line(dialog) == ""
    assert _line(_dialog(qtbot, tmp_path, ALWAYS, names_heard=NamesHeard((PIP,)))) == ""
    assert dialog.edited().voice == replace(dialog.keeper.settings.voice, wake_word="hey_jarvis").with_mode("always")


def test_the_app_opens_settings_with_the_latest_learning_and_an_open_dialog_follows_it(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):  # noqa: F811 (fixture)
    config = app_config(tmp_path, scripted_brain.url)
    app = make_app(replace(config, settings=replace(config.settings, voice=CALLED.voice)))
    with qtbot.waitSignal(app.bridge.names_heard, timeout=2000):
        app.bus.emit(NamesHeard((PIP,)))
    app.open_settings("voice")
    dialog = app.settings_dialog
    qtbot.waitExposed(dialog)
    assert "\u201cPip\u201d" in _line(dialog)
    with qtbot.waitSignal(app.bridge.names_heard, timeout=2000):
        app.bus.emit(NamesHeard((replace(PIP, caught=6, reliable=True),)))  # learned anew, heard well now
    assert _line(dialog) == ""
