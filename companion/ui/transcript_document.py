"""The transcript's lines in one text document: appended, written again in place, dropped, found by height.

Every line is a run of plain blocks in one QTextDocument, its start kept by a cursor (Qt lays
out and paints only what is on screen, and appending a block is cheap, so thousands of lines
scroll smoothly). What a line says and when is the view's business (transcript.py); this keeps
the document and the line records in step, at most MAX_LINES of them.
"""

from __future__ import annotations

import bisect
import time

from PySide6.QtGui import QTextBlockFormat, QTextCursor, QTextDocument, QTextDocumentFragment

from companion.ui.markdown import render_markdown
from companion.ui.transcript_lines import (
    ACTIVITY,
    HEARD,
    SAID,
    TEXT,
    Line,
    char,
    fill_activity,
    fill_notice,
    shape,
)

__all__ = ["MAX_LINES", "TranscriptDocument"]

MAX_LINES = 3000
"""Older lines leave the view (they stay saved) so a day-long window stays light."""


class TranscriptDocument:
    """The lines shown and the document that shows them; `code` holds each Copy link's code."""

    def __init__(self, doc: QTextDocument) -> None:
        self.doc = doc
        """Swapped only while empty (the view builds a loaded conversation in a fresh one)."""
        self.lines: list[Line] = []
        self.code: dict[int, str] = {}
        self._next_code = 0

    def clear(self) -> None:
        self.doc.clear()
        self.lines.clear()
        self.code.clear()

    def add(self, kind: str, text: str, *, at: float | None = None, **extra) -> Line:
        cursor = QTextCursor(self.doc)
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()  # one layout pass for the whole line, not one per change
        if self.lines:
            cursor.insertBlock()
        start = QTextCursor(cursor)
        start.setKeepPositionOnInsert(True)
        line = Line(kind, text, start, at or time.time(), **extra)
        self.lines.append(line)
        self.fill(len(self.lines) - 1)
        while len(self.lines) > MAX_LINES:
            self.remove(self.lines[0])
        cursor.endEditBlock()
        return line

    def span(self, index: int) -> tuple[int, int]:
        """First and end position of line `index` (the end excludes the break to the next line)."""
        begin = self.lines[index].start.position()
        if index + 1 < len(self.lines):
            return begin, self.lines[index + 1].start.position() - 1
        return begin, self.doc.characterCount() - 1

    def blocks(self, index: int):
        begin, end = self.span(index)
        block = self.doc.findBlock(begin)
        while block.isValid() and block.position() <= end:
            yield block
            block = block.next()

    def fill(self, index: int) -> None:
        """Write line `index` again from its record (rendered markdown for her finished replies)."""
        line = self.lines[index]
        begin, end = self.span(index)
        cursor = QTextCursor(self.doc)
        cursor.setPosition(begin)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        cursor.removeSelectedText()
        cursor.setBlockFormat(QTextBlockFormat())
        cursor.setBlockCharFormat(char(line.kind))
        if line.kind == SAID and line.text:
            rendered = render_markdown(line.text, first_code_id=self._next_code, color=TEXT[SAID])
            for code in rendered.code_blocks:
                self.code[self._next_code] = code
                self._next_code += 1
            line.wide = bool(rendered.code_blocks)
            cursor.insertFragment(QTextDocumentFragment(rendered.document))
        elif line.kind == HEARD:
            # What people say is never markup. A spoken turn carries a small microphone mark.
            cursor.insertText(("🎙 " if line.spoken else "") + line.text, char(HEARD))
        elif line.kind == ACTIVITY:
            fill_activity(cursor, line)
        else:
            fill_notice(cursor, line.kind, line.text)
        shape(self.lines[index].kind, list(self.blocks(index)))
        cursor.endEditBlock()

    def remove(self, line: Line) -> None:
        index = self.lines.index(line)
        begin, end = self.span(index)
        cursor = QTextCursor(self.doc)
        if index > 0:
            cursor.setPosition(begin - 1)  # the break before it
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        else:
            cursor.setPosition(begin)
            following = self.lines[1].start.position() if len(self.lines) > 1 else end
            cursor.setPosition(following, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        del self.lines[index]
        if index == 0 and self.lines:
            self.lines[0].start.setPosition(0)

    def top(self, index: int) -> float:
        block = self.doc.findBlock(self.lines[index].start.position())
        return self.doc.documentLayout().blockBoundingRect(block).top()

    def index_at_y(self, y: float) -> int:
        """The last line starting at or above `y` (-1 when none)."""
        return bisect.bisect_right(range(len(self.lines)), y, key=self.top) - 1

    def line_at_y(self, y: float) -> Line | None:
        index = self.index_at_y(y)
        return self.lines[index] if index >= 0 else None
