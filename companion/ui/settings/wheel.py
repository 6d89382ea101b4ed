"""The mouse wheel over a Settings page scrolls the page: a spin box, combo box or slider
changes its value by wheel only once it has been clicked or tabbed into."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QSlider,
    QWidget,
)

VALUE_WIDGETS = (QAbstractSpinBox, QComboBox, QSlider)
"""Widgets whose value the wheel would change in passing."""


class _PassWheelOn(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget) or watched.hasFocus():
            return False
        # Not this widget's: the page around it scrolls (a synthesised wheel event would never
        # reach the scroll area by itself, and a real one only if no widget took it on the way).
        area = watched.parentWidget()
        while area is not None and not isinstance(area, QAbstractScrollArea):
            area = area.parentWidget()
        if area is not None:
            QApplication.sendEvent(area.verticalScrollBar(), event)
        return True


def wheel_scrolls_page(root: QWidget) -> QObject:
    """Apply to every value widget inside `root` now; returns the filter (owned by `root`)."""
    keeper = _PassWheelOn(root)
    for kind in VALUE_WIDGETS:
        for widget in root.findChildren(kind):
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # never focused by the wheel
            widget.installEventFilter(keeper)
    return keeper
