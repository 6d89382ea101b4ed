"""The key recorder records only real combinations and never takes a key that typing needs."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from companion.shortcuts.keys import Combination
from companion.ui.key_recorder import KeyRecorder, PushToTalkKey
from companion.ui.window import CompanionWindow

CTRL = Qt.KeyboardModifier.ControlModifier


@pytest.fixture
def recorder(qtbot):
    recorder = KeyRecorder("F9")
    qtbot.addWidget(recorder)
    recorder.show()
    refusals: list[str] = []
    recorder.refused.connect(refusals.append)
    recorder.refusals = refusals
    qtbot.mouseClick(recorder, Qt.MouseButton.LeftButton)
    assert recorder.recording
    return recorder


@pytest.mark.parametrize(("key", "modifiers", "why"), [
    (Qt.Key.Key_Backspace, Qt.KeyboardModifier.NoModifier, "needed for editing"),
    (Qt.Key.Key_Backspace, CTRL, "needed for editing"),
    (Qt.Key.Key_Delete, Qt.KeyboardModifier.NoModifier, "needed for editing"),
    (Qt.Key.Key_Left, Qt.KeyboardModifier.ShiftModifier, "needed for editing"),
    (Qt.Key.Key_Tab, Qt.KeyboardModifier.NoModifier, "needed for editing"),
    (Qt.Key.Key_V, CTRL, "shortcut you use while typing"),
    (Qt.Key.Key_Z, CTRL, "shortcut you use while typing"),
    (Qt.Key.Key_A, CTRL, "shortcut you use while typing"),
    (Qt.Key.Key_Return, CTRL, "needed for editing"),
    (Qt.Key.Key_Q, Qt.KeyboardModifier.NoModifier, "types text"),
    (Qt.Key.Key_F9, CTRL | Qt.KeyboardModifier.AltModifier, "text console"),
])
def test_the_recorder_refuses_keys_that_typing_needs_and_keeps_the_old_key(recorder, qtbot, key, modifiers, why):
    qtbot.keyClick(recorder, key, modifiers)
    assert recorder.recording and recorder.key_text() == "F9"
    assert why in recorder.refusals[-1]


def test_a_modifier_alone_is_not_a_combination_and_a_real_one_is_recorded(recorder, qtbot):
    qtbot.keyPress(recorder, Qt.Key.Key_Control, CTRL)
    qtbot.keyRelease(recorder, Qt.Key.Key_Control)
    assert recorder.recording and recorder.key_text() == "F9"
    qtbot.keyClick(recorder, Qt.Key.Key_P, CTRL | Qt.KeyboardModifier.AltModifier)
    assert not recorder.recording and recorder.key_text() == "Ctrl+Alt+P"


@pytest.mark.parametrize("saved", ["Backspace", "Ctrl+V", "Ctrl", "Left", "Ctrl+Alt+F2"])
def test_a_saved_editing_key_reads_as_f9_and_the_text_box_still_edits(qtbot, qapp, saved):
    assert PushToTalkKey.parse(saved).text() == "F9"
    window = CompanionWindow(push_to_talk_key=saved)
    qtbot.addWidget(window)
    window.install_push_to_talk(qapp)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    presses: list[bool] = []
    window.push_to_talk.connect(presses.append)
    QApplication.clipboard().setText("pasted")
    qtbot.keyClicks(window.text_box, "abc")
    qtbot.keyClick(window.text_box, Qt.Key.Key_Backspace)
    qtbot.keyClick(window.text_box, Qt.Key.Key_V, CTRL)
    assert window.text_box.text() == "abpasted" and presses == []
    window.set_voice("ready")
    assert "hold F9 to talk" in window.text_box.placeholderText()


@pytest.mark.parametrize(("text", "trigger", "keysym"), [
    ("F9", "F9", "F9"), ("Ctrl+Alt+P", "CTRL+ALT+p", "p"), ("Meta+Space", "LOGO+space", "space"),
    ("Ctrl+Shift+ScrollLock", "CTRL+SHIFT+Scroll_Lock", "Scroll_Lock"), ("Ctrl++", "CTRL+plus", "plus"),
])
def test_a_recorded_key_is_named_for_the_portal_and_for_x11(text, trigger, keysym):
    combination = Combination.parse(text)
    assert combination.portal_trigger() == trigger and combination.keysym == keysym
