"""The pill row's chip naming a background job while it runs ("Working on: …")."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

SHORTEST = "Working…"
"""What the chip says when the row has room for nothing more."""


class WorkChip(QLabel):
    """As wide as its words when the row has room; narrower, cut with "…", when it has not
    (never narrower than "Working…", and never widening the window beyond that). The tooltip
    has the task whole."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("workChip")
        self.full_text = ""
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setVisible(False)

    def show_task(self, text: str, task: str) -> None:
        self.full_text = text
        self.setToolTip(task)
        self._fit()
        self.updateGeometry()
        self.setVisible(True)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return self._size_for(self.full_text)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return self._size_for(SHORTEST)

    def _size_for(self, text: str) -> QSize:
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(text) + margins.left() + margins.right() + 2
        return QSize(width, super().sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt name)
        super().showEvent(event)
        self._fit()  # its font is known for sure only once it is polished, on show

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt name)
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self.updateGeometry()
            self._fit()

    def _fit(self) -> None:
        room, metrics = self.contentsRect().width(), self.fontMetrics()
        fits = metrics.horizontalAdvance(self.full_text) <= room  # elidedText cuts some that fit
        self.setText(self.full_text if fits else metrics.elidedText(self.full_text, Qt.TextElideMode.ElideRight, room))
