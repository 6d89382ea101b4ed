"""The transcript: her markdown rendered (code, links, lists), bubbles sized to their text, one
line per tool with Stop, timestamps on hover, and a saved conversation loaded back."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QUrl, Slot
from PySide6.QtGui import (
    QDesktopServices,
    QFont,
    QFontInfo,
    QGuiApplication,
    QHelpEvent,
    QTextCursor,
)
from PySide6.QtWidgets import QToolTip
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion.conversations import Entry
from companion.ui.transcript import TranscriptView

REPLY = """Here is **the plan**, with *care*:

- buy `flour`
- bake the [bread](https://example.com/bread)

```python
print("hello")
x = 42
```
"""


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture
def view(qtbot):
    view = TranscriptView()
    qtbot.addWidget(view)
    view.resize(460, 600)
    view.show()
    qtbot.waitExposed(view)
    return view


class _Browser(QObject):
    """Stands in for the desktop's browser: records the URLs the app asks it to open."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.opened.append(url.toString())


def _anchor_point(view: TranscriptView, href: str) -> QPoint:
    """Where on screen the link to `href` is drawn."""
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().anchorHref() == href:
                cursor = QTextCursor(view.document())
                cursor.setPosition(fragment.position() + 1)
                return view.cursorRect(cursor).center()
            it += 1
        block = block.next()
    raise AssertionError(f"no link to {href}")


def _formats_of(view: TranscriptView, text: str):
    found = view.document().find(text)
    assert not found.isNull(), f"{text!r} is not shown"
    cursor = QTextCursor(view.document())
    cursor.setPosition(found.selectionStart() + 1)
    return cursor.charFormat(), cursor.block()


def test_her_markdown_shows_a_list_bold_a_link_and_a_code_block_in_monospace(view):
    view.add_heard("how do I make a loaf?", spoken=False)
    view.add_reply_delta("Here is **the pl")  # streamed plain, rendered when the round is done
    view.finish_reply(REPLY)
    shown = view.line_at(1)["shown"]
    assert "**" not in shown and "```" not in shown and "[bread]" not in shown
    bold, _ = _formats_of(view, "the plan")
    assert bold.fontWeight() >= QFont.Weight.Bold
    italic, _ = _formats_of(view, "care")
    assert italic.fontItalic()
    _, item = _formats_of(view, "buy")
    assert item.textList() is not None and item.textList().count() == 2
    link, _ = _formats_of(view, "bread")
    assert link.isAnchor() and link.anchorHref() == "https://example.com/bread"
    code, code_block = _formats_of(view, 'print("hello")')
    assert QFontInfo(QFont(code.fontFamilies()[0])).fixedPitch()
    inline, _ = _formats_of(view, "flour")
    assert QFontInfo(QFont(inline.fontFamilies()[0])).fixedPitch()
    body, _ = _formats_of(view, "Here is")
    assert not QFontInfo(QFont(body.fontFamilies()[0] if body.fontFamilies() else body.font().family())).fixedPitch()
    assert code_block.next().text() == "x = 42" and code_block.next().next().text() == "Copy"


def test_copy_puts_the_code_block_on_the_clipboard_and_a_link_opens_in_the_browser(view, qtbot):
    view.finish_reply(REPLY)
    QGuiApplication.clipboard().setText("")
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=_anchor_point(view, "copy:0"))
    assert QGuiApplication.clipboard().text() == 'print("hello")\nx = 42'
    browser = _Browser()
    QDesktopServices.setUrlHandler("https", browser, "open")
    try:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         pos=_anchor_point(view, "https://example.com/bread"))
    finally:
        QDesktopServices.unsetUrlHandler("https")
    assert browser.opened == ["https://example.com/bread"]


def test_bubbles_are_sized_to_their_text(view):
    view.add_heard("hello", spoken=False)
    view.finish_reply("hi")
    view.finish_reply("A much longer reply that goes on and on, enough words to fill the whole line and wrap "
                      "onto the next one.")
    short_heard, short_said, long_said = (view.line_at(i)["bubble"] for i in range(3))
    assert short_heard.width() < 90 and short_said.width() < 60
    assert long_said.width() > 300
    assert short_heard.right() > long_said.right()  # yours on the right, hers on the left
    assert short_said.left() < short_heard.left()


def test_a_tool_is_one_activity_line_with_stop_then_its_result(view, qtbot):
    view.add_heard("find my notes", spoken=True)
    assert view.line_at(0)["shown"].startswith("🎙")  # a spoken turn carries the mark
    view.add_speech("announce", "Let me look through your files.", "search_files")
    view.tool_started("search_files", "call-1")
    running = view.line_at(1)["shown"]
    assert "search_files" in running and "Let me look through your files." in running and "Stop" in running
    with qtbot.waitSignal(view.stop_requested, timeout=2000):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=_anchor_point(view, "stop:"))
    view.add_speech("heartbeat", "Still looking...", "search_files")
    view.tool_finished("search_files", "ok", "3 matches in notes.md")
    view.add_speech("complete", "Found them.", "search_files")
    done = view.line_at(1)["shown"]
    assert done.startswith("✓") and "3 matches in notes.md" in done and "Stop" not in done
    assert view.entries() == [("heard", "find my notes"), ("activity", "search_files: Let me look through your files.")]


def test_hovering_a_line_shows_when_it_was_said(view, qtbot):
    view.add_heard("hello", spoken=False)
    line = view.line_at(0)
    point = line["bubble"].center().toPoint()
    event = QHelpEvent(QEvent.Type.ToolTip, point, view.viewport().mapToGlobal(point))
    QGuiApplication.sendEvent(view.viewport(), event)
    from datetime import datetime

    assert QToolTip.text() == datetime.fromtimestamp(line["at"]).strftime("%H:%M")


def test_a_saved_conversation_of_thousands_of_lines_loads_and_scrolls(view):
    entries = []
    for n in range(1500):
        entries.append(Entry("heard", f"question {n}", at=1_700_000_000 + n))
        entries.append(Entry("said", f"answer **{n}**", at=1_700_000_000 + n))
    entries.append(Entry("activity", "Let me check the clock.", tool="get_time", outcome="ok", elapsed_s=0.4))
    view.load(entries)
    assert len(view.entries()) == 3000  # the oldest line leaves the view (it stays saved)
    assert view.entries()[0] == ("said", "answer **0**")
    assert view.entries()[-2] == ("said", "answer **1499**")
    assert view.entries()[-1] == ("activity", "get_time: Let me check the clock.")
    bar = view.verticalScrollBar()
    assert bar.value() == bar.maximum() > 0
    bar.setValue(bar.maximum() // 2)
    view.repaint()
    view.clear()
    assert view.entries() == [] and view.document().toPlainText() == ""


def test_an_mm_hm_over_her_streaming_reply_comes_after_it_and_the_reply_shows_once(view, qtbot):
    """A backchannel heard within her turn (UserHeard stamped with the turn whose reply streams)
    is no new turn: her reply stays one bubble and the words come right after it. Shown as a
    new turn, the reply was cut in two and its first part shown twice once it finished."""
    from companion import events as ev
    from companion.ui.bridge import EventBridge

    bridge, bus = EventBridge(), ev.EventBus()
    bus.subscribe(bridge.deliver)
    bridge.heard.connect(view.add_heard)
    bridge.heard_aside.connect(view.add_aside)
    bridge.reply_delta.connect(view.add_reply_delta)
    bridge.reply_done.connect(view.finish_reply)
    with qtbot.waitSignal(bridge.reply_done):
        bus.emit(ev.UserHeard("Tell me a story.", spoken=True, turn=3))
        bus.emit(ev.ReplyDelta("Once upon a time ", turn=3))
        bus.emit(ev.UserHeard("Mm hmm.", spoken=True, turn=3))
        bus.emit(ev.ReplyDelta("there was a fox.", turn=3))
        bus.emit(ev.ReplyDone("Once upon a time there was a fox.", turn=3))
    assert view.entries() == [("heard", "Tell me a story."), ("said", "Once upon a time there was a fox."),
                              ("heard", "Mm hmm.")]
    with qtbot.waitSignal(bridge.heard):
        bus.emit(ev.TurnFinished("Once upon a time there was a fox.", "neutral", turn=3))
        bus.emit(ev.UserHeard("And then?", spoken=True, turn=4))  # the next turn is a turn
    assert view.entries()[-1] == ("heard", "And then?")
