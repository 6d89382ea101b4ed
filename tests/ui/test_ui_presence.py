"""The pill, the face and the Stop control tell the truth, and the text box keeps the keyboard."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion import events as ev
from companion.ui.bridge import EventBridge
from companion.ui.window import CompanionWindow


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture
def window(qtbot, qapp):
    window = CompanionWindow(push_to_talk_key="F8")
    qtbot.addWidget(window)
    bridge = EventBridge()
    bus = ev.EventBus()
    bridge.attach(bus)
    window.connect_bridge(bridge)
    window.install_push_to_talk(qapp)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    window.bus, window.bridge = bus, bridge
    return window


def _emit(qtbot, window, *events) -> None:
    with qtbot.waitSignal(window.bridge.event, timeout=2000, check_params_cb=lambda e: e is events[-1]):
        for event in events:
            window.bus.emit(event)


def test_the_text_box_has_the_keyboard_at_launch(window):
    assert QApplication.focusWidget() is window.text_box


def test_typing_after_closing_the_menu_goes_to_the_text_box(window, qtbot):
    window.captions.setFocus()  # wherever the user clicked last
    menu = window.menu_button.menu()
    menu.popup(window.menu_button.mapToGlobal(window.menu_button.rect().bottomLeft()))
    qtbot.waitUntil(menu.isVisible, timeout=2000)
    menu.close()
    qtbot.waitUntil(lambda: not menu.isVisible(), timeout=2000)
    qtbot.keyClicks(QApplication.focusWidget(), "hello")
    assert window.text_box.text() == "hello"
    assert window.menu_button.focusPolicy() == Qt.FocusPolicy.NoFocus


def test_an_unreachable_brain_turns_the_pill_offline_until_she_reaches_it(window, qtbot):
    window.set_started(True)
    _emit(qtbot, window, ev.ErrorOccurred("brain", "unreachable", "I can't reach my brain."))
    assert window.state_label.text() == "Offline: can't reach my brain"
    _emit(qtbot, window, ev.UserHeard("hi", spoken=False), ev.StateChanged(ev.State.THINKING),
          ev.ReplyDelta("Hello!"), ev.StateChanged(ev.State.IDLE), ev.TurnFinished("Hello!", "happy"))
    assert window.state_label.text() == "Ready"


def test_starting_and_loading_her_voice_are_not_thinking(window):
    window.set_started(False)
    assert window.state_label.text() == "Starting…"
    window.set_started(True)
    window.set_voice("loading", 0.4)
    assert window.state_label.text() == "Loading my voice… 40 %"
    assert window.face.animator.state == "idle"
    window.set_voice("ready")
    window.show_state("listening")
    assert window.state_label.text() == "Listening…"


def test_without_voice_there_are_no_mic_controls_and_text_streams_as_replying(window, qtbot):
    window.set_voice("none")
    assert not window.mute_button.isVisible()
    assert "F8" not in window.text_box.placeholderText()
    _emit(qtbot, window, ev.StateChanged(ev.State.THINKING))
    assert window.state_label.text() == "Thinking…" and window.stop_button.isVisible()
    _emit(qtbot, window, ev.ReplyDelta("Once upon"))
    assert window.state_label.text() == "Replying…"
    _emit(qtbot, window, ev.StateChanged(ev.State.IDLE))
    assert window.state_label.text() == "Ready" and not window.stop_button.isVisible()


def test_push_to_talk_while_muted_shows_listening(window, qtbot):
    window.set_voice("ready")
    window.set_muted(True)
    assert window.state_label.text() == "Muted: type to talk"
    qtbot.keyPress(window.text_box, Qt.Key.Key_F8)
    assert window.state_label.text() == "Listening (push-to-talk)"
    assert window.face.animator.state == "listening"
    qtbot.keyRelease(window.text_box, Qt.Key.Key_F8)
    assert window.state_label.text() == "Muted: type to talk"


def test_a_running_tool_is_named_with_a_stop_control(window, qtbot):
    _emit(qtbot, window, ev.StateChanged(ev.State.WORKING), ev.ToolStarted("search_files", "c1"))
    assert window.state_label.text() == "Working: search_files"
    with qtbot.waitSignal(window.stop_requested, timeout=2000):
        window.stop_button.click()


def test_waiting_for_an_ok_pleads_and_then_goes_back_to_the_tools_face(window, qtbot):
    _emit(qtbot, window, ev.StateChanged(ev.State.WORKING), ev.ExpressionChanged("determined", "focus: shell"),
          ev.ToolStarted("shell", "c1"),
          ev.ApprovalNeeded("r1", "rm -r notes", "This deletes files.", False, 60))
    assert window.state_label.text() == "Waiting for your OK"
    assert window.face.expression == "pleading" and window.stop_button.isVisible()
    _emit(qtbot, window, ev.ApprovalResolved("r1", "declined"))
    assert window.state_label.text() == "Working: shell"
    assert window.face.expression == "determined"


def test_a_new_turn_drops_the_last_replys_face(window, qtbot):
    _emit(qtbot, window, ev.ExpressionChanged("happy", "reply"), ev.StateChanged(ev.State.IDLE))
    _emit(qtbot, window, ev.UserHeard("and now?", spoken=False), ev.StateChanged(ev.State.THINKING))
    assert window.face.expression == "thinking"


def test_a_brain_banner_opens_settings_on_the_brain_tab(window, qtbot):
    _emit(qtbot, window, ev.ErrorOccurred("brain", "auth", "My brain refused the key."))
    with qtbot.waitSignal(window.settings_requested, timeout=2000) as blocker:
        window.banners.banner("brain").buttons["Open Settings"].click()
    assert blocker.args == ["brain"]
