"""Pictures for the README and the tray: a contact sheet of all 14 faces, and the app icon."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QIcon, QImage, QPainter, QPixmap

from companion.events import EXPRESSIONS
from companion.ui.face.character import character_for
from companion.ui.face.expressions import shape_for
from companion.ui.face.frame import FaceFrame
from companion.ui.face.painter import paint_background, paint_face

COLUMNS = 7


def contact_sheet(width: int = 1400, character: str = "mira") -> QImage:
    """All 14 expressions of `character` in a labelled grid, `width` pixels wide."""
    cell = width // COLUMNS
    rows = (len(EXPRESSIONS) + COLUMNS - 1) // COLUMNS
    label_h = max(14, cell // 7)
    image = QImage(cell * COLUMNS, rows * (cell + label_h), QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    paint_background(painter, QRectF(image.rect()))
    font = QFont()
    font.setPixelSize(max(10, label_h // 2))
    painter.setFont(font)
    for index, name in enumerate(EXPRESSIONS):
        row, column = divmod(index, COLUMNS)
        top = row * (cell + label_h)
        face_rect = QRectF(column * cell, top, cell, cell)
        paint_face(painter, face_rect, FaceFrame(shape=shape_for(name), phase=0.6, character=character_for(character)),
                   background=False)
        painter.setPen(QColor("#f3eefe"))
        painter.drawText(QRectF(column * cell, top + cell - label_h * 0.4, cell, label_h),
                         Qt.AlignmentFlag.AlignCenter, name)
    painter.end()
    return image


def icon_image(size: int) -> QImage:
    """Her happy face filling a `size` x `size` square with a see-through background."""
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    paint_face(painter, QRectF(0, 0, size, size).adjusted(-size * 0.19, -size * 0.19,
                                                           size * 0.19, size * 0.19),
               FaceFrame(shape=shape_for("happy")), background=False)
    painter.end()
    return image


def app_icon() -> QIcon:
    """Her happy face at the sizes trays and task bars ask for."""
    icon = QIcon()
    for size in (16, 22, 32, 48, 64, 128, 256):
        icon.addPixmap(QPixmap.fromImage(icon_image(size)))
    return icon


def save_icon_png(size: int, out: Path) -> bool:
    """Her launcher icon at `size` pixels as a PNG (for the applications menu)."""
    _app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 (painting needs one)
    return icon_image(size).save(str(out), "PNG")


def save_face_png(name: str, width: int, height: int, out: Path, character: str = "mira") -> tuple[int, int] | None:
    """Render `name` (or "all" for the labelled sheet) as `character` to a PNG; its size, or
    None if unwritable."""
    from companion.ui.face.widget import render_expression

    _app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 (painting needs one)
    image = (contact_sheet(width, character) if name == "all"
             else render_expression(name, width, height, character=character))
    out.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(out), "PNG"):
        return None
    return image.width(), image.height()
