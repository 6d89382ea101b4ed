"""Small drawing helpers shared by the face's layers: colour blends, round pens, curves."""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen


def mix(a: QColor, b: QColor, t: float) -> QColor:
    t = max(0.0, min(1.0, t))
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
        a.alphaF() + (b.alphaF() - a.alphaF()) * t,
    )


def alpha(color: QColor, alpha: float) -> QColor:
    c = QColor(color)
    c.setAlphaF(max(0.0, min(1.0, alpha)) * color.alphaF())
    return c


def round_pen(color: QColor, width: float) -> QPen:
    pen = QPen(color, width)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    return pen


def quad(p0: QPointF, c: QPointF, p1: QPointF, n: int = 14) -> list[QPointF]:
    points = []
    for i in range(n + 1):
        t = i / n
        u = 1 - t
        points.append(QPointF(u * u * p0.x() + 2 * u * t * c.x() + t * t * p1.x(),
                              u * u * p0.y() + 2 * u * t * c.y() + t * t * p1.y()))
    return points


def drop(p: QPainter, tip_below: QPointF, r: float) -> None:
    path = QPainterPath(QPointF(tip_below.x(), tip_below.y() - 2.2 * r))
    path.cubicTo(QPointF(tip_below.x() + r * 1.4, tip_below.y() - r * 0.4),
                 QPointF(tip_below.x() + r, tip_below.y() + r),
                 QPointF(tip_below.x(), tip_below.y() + r))
    path.cubicTo(QPointF(tip_below.x() - r, tip_below.y() + r),
                 QPointF(tip_below.x() - r * 1.4, tip_below.y() - r * 0.4),
                 QPointF(tip_below.x(), tip_below.y() - 2.2 * r))
    p.drawPath(path)
