"""The window and the bridge: events from any thread reach the widgets on the Qt thread."""

from __future__ import annotations

import threading

import pytest
import shiboken6
from PySide6.QtCore import QEvent, Qt, QThread
from PySide6.QtWidgets import QApplication
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion import events as ev
from companion.config import BrainSettings
from companion.ui.bridge import EventBridge
from companion.ui.window import CompanionWindow


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _window(qtbot, **kwargs) -> tuple[CompanionWindow, EventBridge, ev.EventBus]:
    window = CompanionWindow(**kwargs)
    qtbot.addWidget(window)
    bridge = EventBridge()
    bus = ev.EventBus()
    bridge.attach(bus)
    window.connect_bridge(bridge)
    window.show()
    return window, bridge, bus


def test_the_bridge_delivers_events_emitted_on_another_thread_on_the_qt_thread(qtbot, qapp):
    bridge = EventBridge()
    bus = ev.EventBus()
    bridge.attach(bus)
    received: list[tuple[str, bool]] = []
    bridge.expression.connect(
        lambda name, _reason: received.append((name, QThread.currentThread() is qapp.thread())))
    with qtbot.waitSignal(bridge.expression, timeout=2000):
        worker = threading.Thread(target=bus.emit, args=(ev.ExpressionChanged("happy", "reply"),))
        worker.start()
        worker.join()
    assert received == [("happy", True)]


def test_the_bridge_keeps_the_order_of_events(qtbot):
    bridge = EventBridge()
    seen: list[str] = []
    bridge.reply_delta.connect(seen.append)
    with qtbot.waitSignal(bridge.turn_finished, timeout=2000):
        for piece in ("one ", "two ", "three"):
            bridge.deliver(ev.ReplyDelta(piece))
        bridge.deliver(ev.TurnFinished("one two three", "neutral"))
    assert seen == ["one ", "two ", "three"]


def test_captions_show_what_she_heard_and_what_she_said(qtbot):
    window, bridge, bus = _window(qtbot)
    with qtbot.waitSignal(bridge.turn_finished, timeout=2000):
        bus.emit(ev.UserHeard("what time is it", spoken=True))
        bus.emit(ev.ReplyDelta("Let me "))
        bus.emit(ev.ReplyDelta("look."))
        bus.emit(ev.ReplyDone("Let me look."))
        bus.emit(ev.Speak(ev.SpeechKind.ANNOUNCE, "Checking the clock.", tool="get_time"))
        bus.emit(ev.ToolStarted("get_time", "call-1"))
        bus.emit(ev.ToolFinished("get_time", "call-1", ev.Outcome.OK, "15:10"))
        bus.emit(ev.Speak(ev.SpeechKind.COMPLETE, "Here's the time.", tool="get_time"))
        bus.emit(ev.ReplyDone(""))
        bus.emit(ev.ReplyDelta("It's ten past three."))
        bus.emit(ev.ReplyDone("It's ten past three."))
        bus.emit(ev.TurnFinished("It's ten past three.", "happy"))
    assert window.captions.entries() == [
        ("heard", "what time is it"),
        ("said", "Let me look."),
        ("activity", "get_time: Checking the clock."),  # one line for the tool, no narration bubbles
        ("said", "It's ten past three."),
    ]


def test_typing_in_the_text_box_submits_the_text(qtbot):
    window, _bridge, _bus = _window(qtbot)
    with qtbot.waitSignal(window.text_submitted, timeout=2000) as blocker:
        qtbot.keyClicks(window.text_box, "hello there")
        qtbot.keyClick(window.text_box, Qt.Key.Key_Return)
    assert blocker.args == ["hello there"]
    assert window.text_box.text() == ""


def test_the_face_and_state_follow_the_core(qtbot):
    window, bridge, bus = _window(qtbot)
    with qtbot.waitSignal(bridge.state, timeout=2000):
        bus.emit(ev.ExpressionChanged("thinking", "focus: get_time"))
        bus.emit(ev.StateChanged(ev.State.WORKING))
    assert window.face.expression == "thinking"
    assert window.face.animator.state == "working"
    assert window.state_label.text() == "Working…"


def test_events_still_queued_when_the_window_is_destroyed_reach_nothing(qtbot):
    """The app closes the window while the core's last events are still queued in the bridge
    (a declined command's turn ending): they must not reach widgets that are gone."""
    window = CompanionWindow()  # not given to qtbot: the test destroys it
    bridge = EventBridge()
    bus = ev.EventBus()
    bridge.attach(bus)
    window.connect_bridge(bridge)
    window.show()
    request = ev.ApprovalNeeded("r1", "rm -r old", "it deletes", saveable=False, timeout_s=30.0)
    for event in (ev.UserHeard("delete old", spoken=False), ev.ExpressionChanged("thinking", "tool"),
                  ev.ReplyDelta("Left"), ev.ToolStarted("shell", "c1"), request,
                  ev.ToolFinished("shell", "c1", "declined", ""), ev.ErrorCleared("brain", "x"),
                  ev.TurnFinished("Left it.", "neutral", interrupted=True),
                  last := ev.AttentionChanged("dozing", "idle")):
        bus.emit(event)  # queued: delivered on the next turn of Qt's loop
    shiboken6.delete(window)
    with qtbot.captureExceptions() as raised, qtbot.waitSignal(
            bridge.event, check_params_cb=lambda event: event is last, timeout=2000):
        pass
    assert raised == []


def test_an_unreachable_brain_shows_a_banner_saying_what_to_do_and_a_confused_face(qtbot):
    window, bridge, bus = _window(qtbot, brain=BrainSettings(model="qwen2.5:3b"))
    with qtbot.waitSignal(bridge.error, timeout=2000):
        bus.emit(ev.ErrorOccurred("brain", "unreachable", "I can't reach my brain."))
    banner = window.banners.banner("brain")
    assert banner is not None
    assert "ollama pull qwen2.5:3b" in banner.text() and "Settings" in banner.text()
    assert window.face.expression == "confused"
    with qtbot.waitSignal(window.settings_requested, timeout=2000):
        banner.buttons["Open Settings"].click()


def test_the_mute_button_reports_mute_and_unmute(qtbot):
    window, _bridge, _bus = _window(qtbot)
    window.set_voice("ready")
    with qtbot.waitSignal(window.mute_toggled, timeout=2000) as blocker:
        window.mute_button.click()
    assert blocker.args == [True]
    assert window.state_label.text() == "Muted: type to talk"


def _focused_with_push_to_talk_on_f8(qtbot, qapp) -> tuple[CompanionWindow, list[bool]]:
    """Her window, focused, its key filter installed; and every push_to_talk it says."""
    window, _bridge, _bus = _window(qtbot, push_to_talk_key="F8")
    window.install_push_to_talk(qapp)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    presses: list[bool] = []
    window.push_to_talk.connect(presses.append)
    return window, presses


def test_the_push_to_talk_key_reports_down_and_up(qtbot, qapp):
    window, presses = _focused_with_push_to_talk_on_f8(qtbot, qapp)
    qtbot.keyPress(window.text_box, Qt.Key.Key_F8)
    qtbot.keyRelease(window.text_box, Qt.Key.Key_F8)
    assert presses == [True, False]


def test_the_push_to_talk_key_held_as_her_window_loses_the_focus_is_let_go(qtbot, qapp):
    # Alt+Tab with the key held: its release goes to the other window and is never seen here.
    window, presses = _focused_with_push_to_talk_on_f8(qtbot, qapp)
    qtbot.keyPress(window.text_box, Qt.Key.Key_F8)
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowDeactivate))
    assert presses == [True, False]
    window.global_push_to_talk(True)  # the desktop's shortcut holds it from another window
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowDeactivate))
    assert presses == [True, False, True]


def test_the_background_work_chip_shows_while_work_runs(qtbot):
    window, bridge, bus = _window(qtbot)
    with qtbot.waitSignal(bridge.work_changed, timeout=2000):
        bus.emit(ev.WorkChanged("running", "tidy the downloads folder"))
    assert window.work_chip.isVisible() and "tidy the downloads" in window.work_chip.text()
    with qtbot.waitSignal(bridge.work_changed, timeout=2000):
        bus.emit(ev.WorkChanged("finished", "tidy the downloads folder", "moved 12 files"))
    assert not window.work_chip.isVisible()


def test_the_window_remembers_its_geometry(qtbot):
    window, _bridge, _bus = _window(qtbot)
    window.resize(500, 640)
    saved = window.saved_geometry()
    other = CompanionWindow()
    qtbot.addWidget(other)
    assert other.restore_saved_geometry(saved)
    assert (other.width(), other.height()) == (500, 640)


def test_the_tray_menu_hides_and_shows_the_window_and_mutes(qtbot):
    from companion.ui.desktop.tray import TrayIcon

    window, _bridge, _bus = _window(qtbot)
    tray = TrayIcon(window)
    tray.mute_toggled.connect(window.set_muted)
    tray.toggle_window()
    assert not window.isVisible() and tray.show_action.text() == "Show window"
    tray.toggle_window()
    assert window.isVisible()
    tray.mute_action.trigger()
    assert window.mute_button.isChecked()


def test_always_on_top_sets_the_window_flag(qtbot):
    window, _bridge, _bus = _window(qtbot)
    with qtbot.waitSignal(window.always_on_top_toggled, timeout=2000) as blocker:
        window.on_top_action.trigger()
    assert blocker.args == [True]
    assert window.windowFlags() & Qt.WindowType.WindowStaysOnTopHint
    assert window.isVisible()
