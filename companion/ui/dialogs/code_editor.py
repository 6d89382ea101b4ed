"""A plain-text editor with line numbers in a gutter and problems underlined at their line.

Line numbers are file lines (blocks), never wrapped display lines: a problem "on line 12"
is the twelfth line of the file however narrow the window.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Slot
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

from companion.ui import theme

PROBLEM_COLOUR = "#ff8a8a"


class _Gutter(QWidget):
    def __init__(self, editor: NumberedEditor) -> None:
        super().__init__(editor)
        self._editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self._editor.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt name)
        self._editor.paint_gutter(event)


class NumberedEditor(QPlainTextEdit):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.gutter = _Gutter(self)
        self._problems: dict[int, str] = {}
        self.blockCountChanged.connect(self._fit_gutter)
        self.updateRequest.connect(self._scroll_gutter)
        self._fit_gutter()

    # --- line numbers ---------------------------------------------------------------------
    def gutter_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return 14 + self.fontMetrics().horizontalAdvance("9") * max(2, digits)

    @Slot(int)
    def _fit_gutter(self, _count: int = 0) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    @Slot(QRect, int)
    def _scroll_gutter(self, rect: QRect, dy: int) -> None:
        gutter = getattr(self, "gutter", None)
        if gutter is None:
            return  # a repaint request from Qt's side before or after this editor's Python life
        if dy:
            gutter.scroll(0, dy)
        else:
            gutter.update(0, rect.y(), gutter.width(), rect.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        if getattr(self, "gutter", None) is None:
            return
        area = self.contentsRect()
        self.gutter.setGeometry(QRect(area.left(), area.top(), self.gutter_width(), area.height()))

    def paint_gutter(self, event: QPaintEvent) -> None:
        painter = QPainter(self.gutter)
        painter.fillRect(event.rect(), QColor(theme.SURFACE))
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(self.blockBoundingRect(block).height())
            if block.isVisible() and bottom >= event.rect().top():
                number = block.blockNumber() + 1
                painter.setPen(QColor(PROBLEM_COLOUR if number in self._problems else theme.SOFT_TEXT))
                painter.drawText(0, top, self.gutter.width() - 6, height,
                                 Qt.AlignmentFlag.AlignRight, str(number))
            block = block.next()
            top = bottom
        painter.end()

    # --- problems -------------------------------------------------------------------------
    def mark_problems(self, problems: dict[int, str]) -> None:
        """Underline each 1-based file line in `problems` (its message as the line's tooltip)."""
        self._problems = dict(problems)
        marks = []
        for line in sorted(problems):
            block = self.document().findBlockByNumber(line - 1)
            if not block.isValid():
                continue
            mark = QTextEdit.ExtraSelection()
            fmt = QTextCharFormat()
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            fmt.setUnderlineColor(QColor(PROBLEM_COLOUR))
            fmt.setToolTip(problems[line])
            mark.format = fmt
            cursor = QTextCursor(block)
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
            if not cursor.hasSelection():  # an empty line: underline the next character's place
                cursor.movePosition(QTextCursor.MoveOperation.NextCharacter, QTextCursor.MoveMode.KeepAnchor)
            mark.cursor = cursor
            marks.append(mark)
        self.setExtraSelections(marks)
        self.gutter.update()

    def problem_lines(self) -> list[int]:
        """The 1-based file lines underlined now."""
        return sorted(selection.cursor.blockNumber() + 1 for selection in self.extraSelections())

    def go_to_line(self, line: int) -> None:
        """Put the cursor at the start of 1-based file line `line` and show it."""
        block = self.document().findBlockByNumber(max(0, line - 1))
        self.setTextCursor(QTextCursor(block))
        self.centerCursor()
        self.setFocus()
