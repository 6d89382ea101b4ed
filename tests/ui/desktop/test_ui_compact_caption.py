"""The compact face as a new user meets it (issue 37): her caption shows whole lines (the end of a
long one), her state while she dozes or listens, her answer rather than the tool's line, and
her state again after the turn; the wheel keeps her on the screen; a compositor that starts
after her makes her see-through without a restart."""

from __future__ import annotations

import pytest
from app_support import app_config
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QGuiApplication, QWheelEvent
from PySide6.QtWidgets import QApplication
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

import companion.ui.desktop.presence as presence
from companion.events import AttentionChanged, State, StateChanged

ANSWER = "[happy] It is half past three, so there is time for a cup of tea before your call."


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture(name="compact_app")
def compact_app_fixture(make_app, tmp_path, scripted_brain, qt_loop):
    """An app (scripted brain, no voice) shown as the small face."""
    app = make_app(app_config(tmp_path, scripted_brain.url))
    app.desktop.set_compact(True)
    yield app
    if app.desktop.compact is not None:
        app.desktop.compact.deleteLater()


def test_a_long_line_shows_its_end_on_up_to_three_whole_lines(compact_app, qtbot):
    compact = compact_app.desktop.compact
    qtbot.waitExposed(compact)
    long_line = "Here is a sentence far too long for a small face to show in full on one line " * 3
    compact_app.bridge.speak.emit("say", long_line, "")
    text = compact.caption.text()
    assert compact.caption.toolTip() == " ".join(long_line.split())  # the whole of it
    assert text.startswith("…") and text.endswith("on one line")  # what she says now
    metrics = compact.caption.fontMetrics()
    room = compact.caption.contentsRect()
    needed = metrics.boundingRect(room.adjusted(0, 0, 0, 10_000), Qt.TextFlag.TextWordWrap, text)
    assert metrics.lineSpacing() * 2 < needed.height() <= room.height() + 1  # three lines, none clipped
    assert compact.rect().contains(compact.caption.geometry())
    assert compact.mask().contains(compact.caption.geometry().center())


def test_while_she_dozes_or_listens_the_caption_says_so(compact_app, qtbot):
    compact = compact_app.desktop.compact
    window = compact_app.window
    window.set_voice("ready")  # as when her voice has loaded
    compact_app.bus.emit(AttentionChanged("dozing"))
    qtbot.waitUntil(lambda: compact.caption_text.startswith("Dozing"), timeout=3000)
    assert compact.caption.isVisible() and compact.caption_text == window.state_label.text()
    compact_app.bus.emit(AttentionChanged("awake"))
    compact_app.bus.emit(StateChanged(State.LISTENING))
    qtbot.waitUntil(lambda: compact.caption_text == "Listening…", timeout=3000)
    assert compact.mask().contains(compact.caption.geometry().center())


def test_the_caption_shows_her_answer_not_the_tool_line_and_then_her_state_again(
        compact_app, qtbot, scripted_brain, qt_loop):
    scripted_brain.push({"tool_calls": [{"name": "get_time", "arguments": {}}]}, {"text": ANSWER})
    compact = compact_app.desktop.compact
    compact_app.desktop.caption.linger_s = 2.0
    told = []

    async def ask():
        await compact_app.start()
        said = signal_future(compact_app.bridge.speak)
        finished = signal_future(compact_app.bridge.turn_finished)
        compact_app.window.text_submitted.emit("what time is it")  # typed before she went small
        told.append((await said)[1])
        await finished

    qt_loop(ask())
    assert told == ["Let me check the clock."]  # the tool's line came first
    assert compact.caption_text == "It is half past three, so there is time for a cup of tea before your call."
    # Not stale: once her turn is over and her words have lingered, the caption is her state.
    qtbot.waitUntil(lambda: compact.caption_text == compact_app.window.state_label.text(), timeout=5000)
    assert compact.caption_text == "Ready"


def _wheel(widget, steps: int) -> None:
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                        QPoint(0, 120 * steps), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_the_wheel_grows_her_only_as_far_as_the_screen_allows(compact_app, qtbot):
    compact = compact_app.desktop.compact
    qtbot.waitExposed(compact)
    area = QGuiApplication.primaryScreen().availableGeometry()
    start = compact.geometry()
    assert start.bottom() > area.center().y() and start.right() > area.center().x()  # her corner
    for _ in range(30):
        _wheel(compact, 1)
        assert area.contains(compact.geometry()), compact.geometry()
    assert compact.width() == min(520, area.height() - (start.height() - start.width()))
    for _ in range(30):
        _wheel(compact, -1)
    assert compact.width() == 120 and area.contains(compact.geometry())


def test_a_compositor_that_starts_after_her_is_noticed_without_a_restart(make_app, tmp_path, scripted_brain,
                                                                          monkeypatch, qtbot):
    composited = [False]
    monkeypatch.setattr(presence, "translucency_available", lambda _platform: composited[0])
    app = make_app(app_config(tmp_path, scripted_brain.url))
    app.desktop._compositor_check.setInterval(20)
    app.desktop.set_compact(True)
    first = app.desktop.compact
    assert not first.translucent and app.window.banners.banner("compact") is not None
    place = first.geometry()
    composited[0] = True  # e.g. picom started
    qtbot.waitUntil(lambda: app.desktop.compact is not first, timeout=3000)
    compact = app.desktop.compact
    assert compact.translucent and compact.isVisible() and compact.geometry() == place
    assert compact.testAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)
    assert app.window.banners.banner("compact") is None
    # And the other way: with the compositor gone, going compact again gives the square backdrop.
    app.desktop.set_compact(False)
    composited[0] = False
    app.desktop.set_compact(True)
    assert not app.desktop.compact.translucent and app.desktop.compact.isVisible()
    app.desktop.compact.deleteLater()
