"""The conversation as a transcript: her replies in markdown, your words, one line per tool.

One QTextBrowser document holds every line as plain blocks (transcript_document.py; tables
would make every append re-lay the whole document). This view feeds it as turns go, answers
the user's clicks and keys, and paints the rounded bubble behind the visible lines only, sized
to the text's longest line.

The public surface is small: what the bridge feeds (`add_heard`, `add_reply_delta`,
`finish_reply`, `add_speech`, `tool_started`, `tool_finished`), `add_notice` for any other
line (approval decisions, job results), `clear`/`load` for conversations, `entries` to read.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, Qt, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import (
    QDesktopServices,
    QFont,
    QFontInfo,
    QGuiApplication,
    QKeyEvent,
    QPainter,
    QTextCursor,
    QTextDocument,
    QTextOption,
)
from PySide6.QtWidgets import QTextBrowser, QToolTip, QWidget

from companion.ui.markdown import COPY_SCHEME
from companion.ui.transcript_document import MAX_LINES, TranscriptDocument
from companion.ui.transcript_lines import (
    ACTIVITY,
    BUBBLES,
    HEARD,
    NOTICE,
    RADIUS,
    SAID,
    STOP_SCHEME,
    TEXT,
    Line,
    bubble_rect,
    char,
    when,
)

EMOJI_FONTS = ["Noto Color Emoji", "Apple Color Emoji", "Segoe UI Emoji"]
"""Tried after the normal font for glyphs it lacks, so emoji show in colour, not as boxes."""


STOPPED = "*(stopped)*"
"""Where a reply cut short ends (in italics)."""


def stopped(text: str) -> str:
    """`text` as a reply stopped there: "…" when it broke off mid-sentence, then (stopped)."""
    text = text.rstrip()
    if text.endswith("```"):  # a code block: the mark goes under it
        return f"{text}\n\n{STOPPED}"
    return f"{text}{'' if text[-1] in '.!?…:;' else '…'} {STOPPED}"


class TranscriptView(QTextBrowser):
    """The scrolling transcript; keeps to the bottom as she talks unless you scrolled up."""

    stop_requested = Signal()
    """The Stop link on a running tool's line was clicked."""
    typed = Signal(str)
    """Text typed while the transcript had the keyboard: it belongs in the text box."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("transcript")
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._link)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # Nothing scrolls sideways, so a long word or path in code wraps anywhere rather than
        # running out of the bubble.
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        # Tab can bring the keyboard here: a ring shows it (the same width unfocused, in the
        # background colour, so nothing moves).
        self.setStyleSheet("QTextBrowser#transcript { background: #262a44; border: 2px solid #262a44; }"
                           "QTextBrowser#transcript:focus { border-color: #b9a8ff; }")
        self._page = TranscriptDocument(self._new_document())
        self.setDocument(self._page.doc)
        self._open_reply: Line | None = None
        self._turn_reply: Line | None = None
        """Her reply in the turn going on (marked when the turn is stopped)."""
        self._held: list[tuple[str, str]] = []
        """(kind, text) of lines that came while a reply streamed (notices, asides): shown once it is whole."""
        self._announced: dict[str, str] = {}
        self._stick = True
        self._ticker = QTimer(self, interval=1000)
        self._ticker.timeout.connect(self._tick)
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._keep_to_bottom)
        bar.valueChanged.connect(lambda value: setattr(self, "_stick", value >= bar.maximum() - 4))

    # --- what the bridge feeds ------------------------------------------------------------
    @Slot(str, bool)
    def add_heard(self, text: str, spoken: bool = True) -> None:
        self._close_reply()
        self._turn_reply = None
        self._page.add(HEARD, text, spoken=spoken)

    @Slot(str)
    def add_aside(self, text: str) -> None:
        """Words said over her reply that asked nothing of her ("Mm-hmm."): while her reply streams
        it stays one bubble and the line comes right after it; her turn goes on."""
        if self._open_reply is not None:
            self._held.append((HEARD, text))
            return
        self._page.add(HEARD, text, spoken=True)

    @Slot(str)
    def add_reply_delta(self, text: str) -> None:
        if self._open_reply is None:
            self._open_reply = self._turn_reply = self._page.add(SAID, "")
        line = self._open_reply
        line.text += text
        # Plain while it streams (half a code fence is not markdown yet); rendered when done.
        # The open reply is always the last line.
        cursor = QTextCursor(self._page.doc)
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text, char(SAID))

    @Slot(str)
    def finish_reply(self, text: str) -> None:
        """One model round's whole reply: it replaces the streamed pieces (or drops an empty one)."""
        self._finish(text)
        self._release_held()

    def end_turn(self, interrupted: bool = False) -> None:
        """Her turn is over: notices held back are shown. A reply cut short (Esc, Stop, a new
        question) says so where it stops, rather than ending mid-sentence ("…and every")."""
        self._close_reply()
        line, self._turn_reply = self._turn_reply, None
        if interrupted and line is not None and line in self._page.lines and line.text.strip():
            line.text = stopped(line.text)
            self._page.fill(self._page.lines.index(line))

    def _finish(self, text: str) -> None:
        line, self._open_reply = self._open_reply, None
        text = text.strip()
        if line is None:
            if text:
                self._turn_reply = self._page.add(SAID, text)
            return
        if text:
            line.text = text
            self._page.fill(self._page.lines.index(line))
        elif not line.text.strip():
            self._page.remove(line)

    @Slot(str, str, str)
    def add_speech(self, kind: str, text: str, tool: str = "") -> None:
        """A line she says that is not reply text. Narration about a tool becomes its activity
        line (the announcement says what it is doing); anything else she says is a bubble."""
        if kind == "announce" and tool:
            self._announced[tool] = text
            return
        if kind in ("announce", "heartbeat", "complete", "fail"):
            return  # the activity line shows progress and the result
        self._close_reply()
        self._page.add(SAID, text)

    @Slot(str, str)
    def tool_started(self, name: str, _call_id: str = "") -> None:
        self._close_reply()
        self._page.add(ACTIVITY, name, tool=name, doing=self._announced.pop(name, ""), started=time.monotonic())
        self._ticker.start()

    @Slot(str, str, str)
    def tool_finished(self, name: str, outcome: str, detail: str = "") -> None:
        line = next((x for x in reversed(self._page.lines) if x.kind == ACTIVITY and x.tool == name and not x.outcome),
                    None)
        if line is None:  # refused before it started
            line = self._page.add(ACTIVITY, name, tool=name, doing=self._announced.pop(name, ""))
        else:
            line.elapsed_s = time.monotonic() - line.started
        line.outcome, line.detail = outcome or "ok", detail
        self._page.fill(self._page.lines.index(line))

    @Slot(str)
    def add_notice(self, text: str) -> None:
        if self._open_reply is not None:
            # While she streams a reply it stays one bubble: the notice comes right after it.
            self._held.append((NOTICE, text))
            return
        self._page.add(NOTICE, text)

    # --- conversations --------------------------------------------------------------------
    def clear(self) -> None:  # noqa: D102 (QTextBrowser.clear, plus our own bookkeeping)
        self._page.clear()
        self._open_reply = self._turn_reply = None
        self._held.clear()
        self._announced.clear()
        self._ticker.stop()

    def load(self, entries) -> None:
        """Show a saved conversation (companion.conversations.Entry lines), replacing what is shown."""
        self.clear()
        # Built in a document no view shows yet: five times faster than laying out every line.
        shown, self._page.doc = self._page.doc, self._new_document()
        for entry in entries[-MAX_LINES:]:
            self._page.add(entry.kind if entry.kind in TEXT else NOTICE, entry.text, at=entry.at, spoken=entry.spoken,
                      tool=entry.tool, doing=entry.text if entry.kind == ACTIVITY else "",
                      outcome=entry.outcome or ("interrupted" if entry.kind == ACTIVITY else ""),
                      detail=entry.detail, elapsed_s=entry.elapsed_s)
        self.setDocument(self._page.doc)
        shown.deleteLater()
        self._stick = True
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def _new_document(self) -> QTextDocument:
        document = QTextDocument(self)
        font = QFont(self.font())
        # The real family, not an alias like "Sans Serif": an alias is not matched first, and
        # the emoji font would then draw spaces and digits too.
        font.setFamilies([QFontInfo(font).family(), *EMOJI_FONTS])
        document.setDefaultFont(font)
        document.setDocumentMargin(10)
        return document

    # --- reading back (tests, copy) -------------------------------------------------------
    def entries(self) -> list[tuple[str, str]]:
        """(kind, text) per line; an activity line reads "tool: what it is doing"."""
        return [(x.kind, f"{x.tool}: {x.doing}" if x.kind == ACTIVITY else x.text) for x in self._page.lines]

    def line_at(self, index: int) -> dict:
        """Everything one line holds, for tests: kind, text, outcome, spoken, time, shown text."""
        line = self._page.lines[index]
        begin, end = self._page.span(index)
        cursor = QTextCursor(self._page.doc)
        cursor.setPosition(begin)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        return {"kind": line.kind, "text": line.text, "outcome": line.outcome, "spoken": line.spoken,
                "at": line.at, "shown": cursor.selection().toPlainText(), "bubble": bubble_rect(self._page.lines[index], self._page.blocks(index), self._page.doc)}

    # --- building lines -------------------------------------------------------------------
    def _close_reply(self) -> None:
        if self._open_reply is not None and not self._open_reply.text.strip():
            self._page.remove(self._open_reply)
        self._open_reply = None
        self._release_held()

    def _release_held(self) -> None:
        held, self._held = self._held, []
        for kind, text in held:
            self._page.add(kind, text, **({"spoken": True} if kind == HEARD else {}))

    def _tick(self) -> None:
        first = max(0, len(self._page.lines) - 50)
        running = [i for i in range(first, len(self._page.lines))
                   if self._page.lines[i].kind == ACTIVITY and not self._page.lines[i].outcome and self._page.lines[i].started]
        for index in running:
            self._page.fill(index)
        if not running:
            self._ticker.stop()

    # --- the user's side ------------------------------------------------------------------
    def _link(self, url: QUrl) -> None:
        scheme = url.scheme()
        if scheme == COPY_SCHEME:
            code = self._page.code.get(int(url.path() or -1))
            if code is not None:
                QGuiApplication.clipboard().setText(code)
                QToolTip.showText(self.cursor().pos(), "Copied")
        elif scheme == STOP_SCHEME:
            self.stop_requested.emit()
        elif scheme in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)  # her links open in the browser, never inside the app

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        text = event.text()
        commands = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier \
            | Qt.KeyboardModifier.MetaModifier
        if text and text.isprintable() and not event.modifiers() & commands:
            self.typed.emit(text)  # words typed here are never lost; keys that scroll or copy stay
            event.accept()
            return
        super().keyPressEvent(event)

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if event.type() == QEvent.Type.ToolTip:
            pos = event.pos()
            anchor = self.anchorAt(pos)
            line = self._page.line_at_y(pos.y() + self.verticalScrollBar().value())
            if anchor and not anchor.startswith((COPY_SCHEME, STOP_SCHEME)):
                QToolTip.showText(event.globalPos(), anchor, self)
            elif line is not None:
                QToolTip.showText(event.globalPos(), when(line), self)
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

    # --- painting -------------------------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802
        top = self.verticalScrollBar().value()
        height = self.viewport().height()
        painter = QPainter(self.viewport())
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(Qt.PenStyle.NoPen)
        for index in range(max(0, self._page.index_at_y(top)), len(self._page.lines)):
            if self._page.top(index) > top + height:
                break
            color = BUBBLES.get(self._page.lines[index].kind)
            if color is not None:
                painter.setBrush(color)
                painter.drawRoundedRect(bubble_rect(self._page.lines[index], self._page.blocks(index), self._page.doc).translated(0, -top), RADIUS, RADIUS)
        painter.end()
        super().paintEvent(event)

    def _keep_to_bottom(self, _minimum: int, maximum: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(maximum)


