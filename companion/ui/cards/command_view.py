"""The exact command on an approval card: selectable, wrapped to the card's width, every
hidden character (control, escape, zero-width, bidi) spelled out and highlighted."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QResizeEvent,
    QTextCharFormat,
    QTextCursor,
    QTextOption,
)
from PySide6.QtWidgets import QPlainTextEdit, QSizePolicy, QWidget

from companion.safety.consent.visible import make_visible

COMMAND_LINES = 4
"""The command box grows to this many lines, then scrolls (the window never grows)."""
HIDDEN_MARK = QColor(255, 196, 0, 150)
"""The background of a spelled-out hidden character: readable on the light and dark themes."""


class CommandView(QPlainTextEdit):
    """The exact command, selectable, wrapped anywhere to the card's width (never wider), with
    hidden characters spelled out and highlighted."""

    def __init__(self, command: str, parent: QWidget | None = None, *, code: bool = False) -> None:
        shown = make_visible(command, keep_newlines=code)
        super().__init__(shown.text, parent)
        self.hidden = shown.hidden
        """How many characters were spelled out."""
        self.setObjectName("approvalCommand")
        self.setReadOnly(True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(40)
        self._mark(shown.spans)
        self._fit()

    def _mark(self, spans: tuple[tuple[int, int], ...]) -> None:
        mark = QTextCharFormat()
        mark.setBackground(HIDDEN_MARK)
        mark.setToolTip("A hidden character, spelled out")
        for start, end in spans:
            cursor = QTextCursor(self.document())
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(mark)

    def marked(self) -> list[str]:
        """The highlighted pieces of text, in order (what was spelled out)."""
        pieces: list[str] = []
        block = self.document().firstBlock()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.charFormat().background().color() == HIDDEN_MARK:
                    pieces.append(fragment.text())
                it += 1
            block = block.next()
        return pieces

    def text(self) -> str:
        return self.toPlainText()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        # Tall enough for the wrapped command, up to COMMAND_LINES lines; then it scrolls.
        lines = 0
        block = self.document().firstBlock()
        while block.isValid():
            layout = block.layout()
            lines += max(1, layout.lineCount() if layout is not None else 1)
            block = block.next()
        shown = min(max(lines, 1), COMMAND_LINES)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded if lines > COMMAND_LINES
                                        else Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        height = shown * self.fontMetrics().lineSpacing() + 2 * int(self.document().documentMargin()) \
            + 2 * self.frameWidth() + 4
        if self.height() != height:
            self.setFixedHeight(height)
