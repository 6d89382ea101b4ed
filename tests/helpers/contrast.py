"""Measure text contrast on real rendered widgets (WCAG 2.x), not by comparing palette entries.

For each visible, enabled piece of text, the whole top-level widget is rendered twice: as it
is, and with that one text removed. The pixels that change are the text; the second image
gives the background actually behind them. The contrast of a text is the ratio reached by its
strongest pixels (glyph cores; anti-aliased edges are softer by nature).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, QRect
from PySide6.QtGui import QImage, QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextDocumentLayout,
    QPlainTextEdit,
    QTabBar,
    QTextEdit,
    QWidget,
)

AA = 4.5


@dataclass(frozen=True)
class Measured:
    where: str
    text: str
    ratio: float


def _linear(channel: np.ndarray) -> np.ndarray:
    c = channel / 255.0
    return np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _luminance(rgb: np.ndarray) -> np.ndarray:
    return 0.2126 * _linear(rgb[..., 0]) + 0.7152 * _linear(rgb[..., 1]) + 0.0722 * _linear(rgb[..., 2])


def contrast(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    la, lb = _luminance(a), _luminance(b)
    return (np.maximum(la, lb) + 0.05) / (np.minimum(la, lb) + 0.05)


def _pixels(widget: QWidget) -> np.ndarray:
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    data = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(image.height(), image.bytesPerLine())
    return data[:, : image.width() * 3].reshape(image.height(), image.width(), 3).astype(float)


def _ratio(top: QWidget, rect: QRect, remove: Callable[[], Callable[[], None]]) -> float:
    with_text = _pixels(top)
    restore = remove()
    try:
        without = _pixels(top)
    finally:
        restore()
    scale = with_text.shape[1] / max(1, top.width())
    x0, y0 = max(0, int(rect.left() * scale)), max(0, int(rect.top() * scale))
    x1, y1 = int((rect.right() + 1) * scale), int((rect.bottom() + 1) * scale)
    # A menu may shrink when its text goes: compare the area both renders share.
    h, w = min(with_text.shape[0], without.shape[0]), min(with_text.shape[1], without.shape[1])
    a, b = with_text[y0:min(y1, h), x0:min(x1, w)], without[y0:min(y1, h), x0:min(x1, w)]
    changed = np.abs(a - b).max(axis=-1) > 6
    if not changed.any():
        return 1.0  # the text is drawn in its background's own colour: invisible
    ratios = np.sort(contrast(a[changed], b[changed]))
    return float(ratios[-min(3, len(ratios))])


def _in(top: QWidget, widget: QWidget, rect: QRect | None = None) -> QRect:
    """`rect` of `widget` (all of it by default), cut to the part not scrolled away, in `top`."""
    rect = (rect if rect is not None else widget.rect()).intersected(widget.visibleRegion().boundingRect())
    return QRect(widget.mapTo(top, rect.topLeft()), rect.size())


def _texts(top: QWidget) -> Iterator[tuple[str, str, QRect, Callable[[], Callable[[], None]]]]:
    """(where, text, rect in top, remove) for every visible, enabled text under `top`."""
    widgets = [top, *top.findChildren(QWidget)]
    for w in widgets:
        if not w.isVisible() or not w.isEnabled() or w.window() is not top.window() \
                or w.visibleRegion().isEmpty():
            continue  # hidden, disabled, another window, or scrolled out of sight
        name = f"{type(w).__name__}#{w.objectName() or '?'}"
        plain = isinstance(w, QAbstractButton) or (isinstance(w, QLabel) and w.pixmap().isNull())
        if plain and w.text().strip():
            yield name, w.text(), _in(top, w), _setter(w.text, w.setText, "")
        elif isinstance(w, QGroupBox) and w.title().strip():
            yield name, w.title(), _in(top, w), _setter(w.title, w.setTitle, "")
        elif isinstance(w, QLineEdit):
            if w.text().strip():
                yield name, w.text(), _in(top, w), _setter(w.text, w.setText, "")
            elif w.placeholderText().strip():
                yield name + " placeholder", w.placeholderText(), _in(top, w), \
                    _setter(w.placeholderText, w.setPlaceholderText, "")
        elif isinstance(w, QComboBox) and not w.isEditable() and w.currentText().strip():
            i = w.currentIndex()
            yield name, w.currentText(), _in(top, w), _setter(lambda w=w, i=i: w.itemText(i),
                                                              lambda t, w=w, i=i: w.setItemText(i, t), "")
        elif isinstance(w, QTabBar):
            for i in range(w.count()):
                if w.isTabVisible(i) and w.isTabEnabled(i) and w.tabText(i).strip():
                    yield f"{name} tab", w.tabText(i), _in(top, w, w.tabRect(i)), \
                        _setter(lambda w=w, i=i: w.tabText(i), lambda t, w=w, i=i: w.setTabText(i, t), "")
        elif isinstance(w, QTextEdit) and w.objectName() == "transcript":
            continue  # it keeps its own map of the document (swapping it out would crash it)
        elif isinstance(w, QPlainTextEdit | QTextEdit) and w.toPlainText().strip():
            yield name, w.toPlainText()[:40], _in(top, w.viewport()), _swap_document(w)
        elif isinstance(w, QAbstractItemView) and w.model() is not None:
            yield from _items(top, w, name)
    if isinstance(top, QMenu):
        for action in top.actions():
            if action.isVisible() and action.isEnabled() and action.text().strip():
                yield "QMenu item", action.text(), top.actionGeometry(action), \
                    _setter(action.text, action.setText, "")


def _items(top: QWidget, view: QAbstractItemView, name: str):
    model = view.model()
    viewport = view.viewport().rect()

    def walk(parent):
        try:
            columns = model.columnCount(parent)
        except TypeError:  # a list model keeps columnCount private
            columns = 1
        for row in range(model.rowCount(parent)):
            for column in range(columns):
                index = model.index(row, column, parent)
                text = model.data(index)
                rect = view.visualRect(index)
                if isinstance(text, str) and text.strip() and rect.intersects(viewport) \
                        and not view.isIndexHidden(index):
                    yield f"{name} item", text, _in(top, view.viewport(), rect.intersected(viewport)), \
                        _setter(lambda i=index: model.data(i), lambda t, i=index: model.setData(i, t), "")
            yield from walk(model.index(row, 0, parent))

    yield from walk(view.rootIndex())


def _setter(get, set_, empty):
    def remove():
        old = get()
        set_(empty)
        return lambda: set_(old)
    return remove


def _swap_document(edit):
    def remove():
        original = edit.document()
        blank = QTextDocument(edit)
        if isinstance(edit, QPlainTextEdit):
            blank.setDocumentLayout(QPlainTextDocumentLayout(blank))
        blank.setDefaultFont(original.defaultFont())
        owner = original.parent()
        holder = QObject()
        original.setParent(holder)  # a replaced document the editor owns would be deleted
        edit.blockSignals(True)
        edit.setDocument(blank)

        def restore():
            edit.setDocument(original)
            original.setParent(owner)
            holder.deleteLater()  # (referenced here so it outlives the swap)
            edit.blockSignals(False)
            blank.deleteLater()
        return restore
    return remove


def measure(top: QWidget) -> list[Measured]:
    """Every visible, enabled text under the top-level `top`, with its measured contrast."""
    return [Measured(where, text, _ratio(top, rect, remove)) for where, text, rect, remove in list(_texts(top))]


def too_faint(top: QWidget, minimum: float = AA) -> list[Measured]:
    return [m for m in measure(top) if m.ratio < minimum]


__all__ = ["AA", "Measured", "contrast", "measure", "too_faint"]
