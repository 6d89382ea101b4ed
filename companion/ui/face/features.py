"""A character's features around her face: hair, horns, ears, moustache, bow tie.

`paint_behind` draws what sits behind the head (Mira's bob, Pip's horns and ears) and
`paint_front` what sits on it (a fringe, slicked hair, a moustache, a bow tie). Face units:
the head is the unit circle; eyes at y ≈ 0, brows above -0.55, the mouth from y ≈ 0.38.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QLinearGradient, QPainter, QPainterPath

from companion.ui.face.character import Character
from companion.ui.face.paint_tools import alpha, mix, round_pen


def paint_behind(p: QPainter, c: Character) -> None:
    p.setPen(Qt.PenStyle.NoPen)
    if c.hair == "bob":
        _bob(p, c)
    if c.pointed_ears:
        for side in (-1, 1):
            _ear(p, c, side)
    if c.horns:
        for side in (-1, 1):
            _horn(p, c, side)


def paint_front(p: QPainter, c: Character) -> None:
    p.setPen(Qt.PenStyle.NoPen)
    if c.hair == "bob":
        _fringe(p, c)
        _clip(p, c.accent, QPointF(0.63, -0.7))
    elif c.hair == "slick":
        _slick(p, c)
    if c.moustache:
        _moustache(p, c)
    if c.bow_tie:
        _bow_tie(p, c)


def _shaded(c: QColor, top: float, bottom: float) -> QBrush:
    gradient = QLinearGradient(QPointF(0, top), QPointF(0, bottom))
    gradient.setColorAt(0.0, c.lighter(118))
    gradient.setColorAt(1.0, c.darker(112))
    return QBrush(gradient)


def _bob(p: QPainter, c: Character) -> None:
    path = QPainterPath(QPointF(-1.12, 0.64))
    path.lineTo(-1.15, -0.1)
    path.cubicTo(QPointF(-1.15, -0.86), QPointF(-0.62, -1.17), QPointF(0, -1.17))
    path.cubicTo(QPointF(0.62, -1.17), QPointF(1.15, -0.86), QPointF(1.15, -0.1))
    path.lineTo(1.12, 0.64)
    path.quadTo(QPointF(1.0, 0.74), QPointF(0.8, 0.62))
    path.lineTo(-0.8, 0.62)
    path.quadTo(QPointF(-1.0, 0.74), QPointF(-1.12, 0.64))
    p.setBrush(_shaded(c.hair_color.darker(115), -1.17, 0.7))
    p.drawPath(path)


def _fringe(p: QPainter, c: Character) -> None:
    # Bangs over the forehead, stopping above the brows even when they are raised.
    path = QPainterPath(QPointF(-1.0, -0.2))
    path.cubicTo(QPointF(-1.03, -0.92), QPointF(-0.56, -1.06), QPointF(0, -1.06))
    path.cubicTo(QPointF(0.56, -1.06), QPointF(1.03, -0.92), QPointF(1.0, -0.2))
    path.quadTo(QPointF(0.9, -0.52), QPointF(0.62, -0.64))
    path.quadTo(QPointF(0.42, -0.6), QPointF(0.3, -0.7))
    path.quadTo(QPointF(0.12, -0.6), QPointF(-0.06, -0.72))
    path.quadTo(QPointF(-0.3, -0.6), QPointF(-0.48, -0.68))
    path.quadTo(QPointF(-0.72, -0.6), QPointF(-0.86, -0.5))
    path.quadTo(QPointF(-0.97, -0.38), QPointF(-1.0, -0.2))
    p.setBrush(_shaded(c.hair_color, -1.06, -0.5))
    p.drawPath(path)
    # A soft shine across the crown.
    p.setPen(round_pen(alpha(QColor(255, 255, 255), 0.22), 0.06))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawArc(QRectF(-0.72, -0.98, 1.0, 0.6), 100 * 16, 50 * 16)
    p.setPen(Qt.PenStyle.NoPen)


def _clip(p: QPainter, color: QColor, at: QPointF) -> None:
    p.setBrush(color)
    for k in range(5):
        p.save()
        p.translate(at)
        p.rotate(k * 72)
        p.drawEllipse(QPointF(0, -0.075), 0.05, 0.065)
        p.restore()
    p.setBrush(QColor("#fff3a6"))
    p.drawEllipse(at, 0.04, 0.04)


def _slick(p: QPainter, c: Character) -> None:
    # Grey hair combed back from a side parting, with short sideburns.
    path = QPainterPath(QPointF(-0.99, -0.1))
    path.cubicTo(QPointF(-1.03, -0.95), QPointF(-0.52, -1.07), QPointF(0.02, -1.07))
    path.cubicTo(QPointF(0.6, -1.07), QPointF(1.03, -0.95), QPointF(0.99, -0.1))
    path.lineTo(0.9, -0.1)
    path.quadTo(QPointF(0.86, -0.58), QPointF(0.5, -0.72))
    path.quadTo(QPointF(0.0, -0.86), QPointF(-0.3, -0.78))
    path.quadTo(QPointF(-0.8, -0.68), QPointF(-0.9, -0.1))
    path.closeSubpath()
    p.setBrush(_shaded(c.hair_color, -1.07, -0.1))
    p.drawPath(path)
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.setPen(round_pen(mix(c.hair_color, QColor("#ffffff"), 0.45), 0.025))
    for k, x in enumerate((-0.05, 0.25, 0.52)):
        p.drawArc(QRectF(x - 0.6, -1.0 + k * 0.02, 1.2, 0.5), 60 * 16, 55 * 16)
    p.setPen(round_pen(c.hair_color.darker(150), 0.028))
    p.drawLine(QPointF(-0.36, -1.04), QPointF(-0.3, -0.79))  # the parting
    p.setPen(Qt.PenStyle.NoPen)


def _moustache(p: QPainter, c: Character) -> None:
    # Kept between the eyes and the mouth so every mouth shape still reads.
    color = c.hair_color.darker(118)
    p.setBrush(_shaded(color, 0.14, 0.3))
    for side in (-1, 1):
        path = QPainterPath(QPointF(0, 0.2))
        path.cubicTo(QPointF(side * 0.12, 0.13), QPointF(side * 0.28, 0.15), QPointF(side * 0.35, 0.24))
        path.quadTo(QPointF(side * 0.41, 0.19), QPointF(side * 0.39, 0.14))  # the curled tip
        path.quadTo(QPointF(side * 0.44, 0.25), QPointF(side * 0.33, 0.3))
        path.quadTo(QPointF(side * 0.18, 0.3), QPointF(0, 0.26))
        path.closeSubpath()
        p.drawPath(path)


def _bow_tie(p: QPainter, c: Character) -> None:
    y = 1.04
    p.setBrush(QColor("#f7f7fb"))  # the shirt collar's two points
    for side in (-1, 1):
        collar = QPainterPath(QPointF(side * 0.05, y - 0.1))
        collar.lineTo(side * 0.34, y - 0.16)
        collar.lineTo(side * 0.22, y + 0.1)
        collar.closeSubpath()
        p.drawPath(collar)
    p.setBrush(_shaded(c.accent.lighter(160), y - 0.14, y + 0.14))
    for side in (-1, 1):
        wing = QPainterPath(QPointF(0, y))
        wing.lineTo(side * 0.3, y - 0.14)
        wing.quadTo(QPointF(side * 0.35, y), QPointF(side * 0.3, y + 0.14))
        wing.closeSubpath()
        p.drawPath(wing)
    p.setBrush(c.accent)
    p.drawRoundedRect(QRectF(-0.07, y - 0.075, 0.14, 0.15), 0.04, 0.04)


def _horn(p: QPainter, c: Character, side: int) -> None:
    path = QPainterPath(QPointF(side * 0.28, -0.82))
    path.quadTo(QPointF(side * 0.42, -1.16), QPointF(side * 0.78, -1.3))
    path.quadTo(QPointF(side * 0.66, -1.02), QPointF(side * 0.7, -0.66))
    path.closeSubpath()
    p.setBrush(_shaded(c.accent, -1.42, -0.66))
    p.drawPath(path)
    p.setPen(round_pen(c.accent.darker(135), 0.02))
    for t in (0.35, 0.6):
        x0, y0 = side * (0.3 + 0.2 * t), -0.86 - 0.3 * t
        p.drawLine(QPointF(x0, y0), QPointF(x0 + side * (0.32 - 0.22 * t), y0 + 0.06))
    p.setPen(Qt.PenStyle.NoPen)


def _ear(p: QPainter, c: Character, side: int) -> None:
    outer = QPainterPath(QPointF(side * 0.84, -0.42))
    outer.quadTo(QPointF(side * 1.16, -0.5), QPointF(side * 1.4, -0.66))
    outer.quadTo(QPointF(side * 1.28, -0.05), QPointF(side * 0.88, 0.22))
    outer.closeSubpath()
    p.setBrush(_shaded(c.skin_edge, -0.7, 0.2))
    p.drawPath(outer)
    inner = QPainterPath(QPointF(side * 0.92, -0.3))
    inner.quadTo(QPointF(side * 1.14, -0.4), QPointF(side * 1.28, -0.55))
    inner.quadTo(QPointF(side * 1.15, -0.08), QPointF(side * 0.94, 0.1))
    inner.closeSubpath()
    p.setBrush(alpha(QColor("#e27a9a"), 0.55))
    p.drawPath(inner)
