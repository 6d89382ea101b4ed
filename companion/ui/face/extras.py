"""The face's extras: tears, sweat, Zzz, hearts, sparkles, ? and ..., the anger mark, gloom
lines, and the ring that shows whether she is listening, thinking, working or speaking."""

from __future__ import annotations

import math
from collections import OrderedDict

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QImage, QLinearGradient, QPainter, QPainterPath

from companion.ui.face.expressions import FaceShape
from companion.ui.face.frame import FaceFrame
from companion.ui.face.paint_tools import alpha, drop, round_pen

TEAR = QColor("#8fd3ff")
HEART = QColor("#ff6f91")
SPARKLE = QColor("#fff3a6")
ANGER = QColor("#ff4d5e")
STATE_COLORS = {
    "listening": QColor("#5ee0c0"),
    "thinking": QColor("#b7a6ff"),
    "speaking": QColor("#ff9fb8"),
    "working": QColor("#ffc66b"),
}


def paint_tears(p: QPainter, s: FaceShape, phase: float) -> None:
    if s.tears <= 0.01:
        return
    p.setPen(Qt.PenStyle.NoPen)
    for side in (-1, 1):
        x = side * 0.45
        stream = QPainterPath(QPointF(x - 0.04, 0.02))
        stream.cubicTo(QPointF(x - 0.06, 0.25), QPointF(x + side * 0.02, 0.5), QPointF(x + side * 0.0, 0.72))
        stream.lineTo(QPointF(x + side * 0.07, 0.72))
        stream.cubicTo(QPointF(x + side * 0.08, 0.5), QPointF(x + 0.06, 0.25), QPointF(x + 0.04, 0.02))
        stream.closeSubpath()
        gradient = QLinearGradient(QPointF(x, 0.0), QPointF(x, 0.75))
        gradient.setColorAt(0.0, alpha(TEAR, 0.95 * s.tears))
        gradient.setColorAt(1.0, alpha(TEAR, 0.35 * s.tears))
        p.setBrush(QBrush(gradient))
        p.drawPath(stream)
        # A drop falls off the chin of each stream, over and over.
        t = (phase * 0.9 + (0.5 if side > 0 else 0.0)) % 1.0
        p.setBrush(alpha(TEAR, s.tears * (1.0 - t)))
        drop(p, QPointF(x + side * 0.035, 0.78 + t * 0.22), 0.035)


def paint_gloom(p: QPainter, s: FaceShape) -> None:
    if s.pale <= 0.01:
        return
    p.setPen(round_pen(alpha(QColor("#6f7fb8"), 0.8 * s.pale), 0.022))
    for x in (-0.3, -0.15, 0.0, 0.15, 0.3):
        p.drawLine(QPointF(x, -0.85 + abs(x) * 0.3), QPointF(x, -0.6 + abs(x) * 0.2))


def paint_decorations(p: QPainter, s: FaceShape, phase: float) -> None:
    if s.sweat > 0.01:
        p.setPen(round_pen(alpha(QColor("#4a9bd6"), s.sweat), 0.015))
        p.setBrush(alpha(QColor("#bfe6ff"), s.sweat))
        drop(p, QPointF(0.78, -0.45), 0.07)
    if s.zzz > 0.01:
        for k in range(3):
            t = (phase * 0.35 + k / 3) % 1.0
            size = 0.1 + 0.08 * k
            x = 0.75 + t * 0.35 + k * 0.05
            y = -0.75 - t * 0.45 - k * 0.1
            p.setPen(round_pen(alpha(QColor("#cfd8ff"), s.zzz * (1 - t * 0.7)), 0.03 + 0.008 * k))
            p.drawPolyline([QPointF(x, y), QPointF(x + size, y), QPointF(x, y + size),
                            QPointF(x + size, y + size)])
    if s.hearts > 0.01:
        for k, (hx, hy, r) in enumerate(((0.85, -0.6, 0.12), (1.08, -0.25, 0.08), (-0.9, -0.7, 0.09))):
            bob = math.sin(phase * 2.2 + k * 1.7) * 0.04
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(alpha(HEART, s.hearts))
            _heart(p, QPointF(hx, hy + bob), r)
    if s.sparkles > 0.01:
        for k, (sx, sy, r) in enumerate(((0.86, -0.72, 0.13), (-0.9, -0.55, 0.09), (1.05, -0.2, 0.07))):
            twinkle = 0.75 + 0.25 * math.sin(phase * 4.0 + k * 2.1)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(alpha(SPARKLE, s.sparkles * twinkle))
            _star(p, QPointF(sx, sy), r * twinkle)
    if s.question > 0.01:
        p.setPen(round_pen(alpha(QColor("#d9d2ff"), s.question), 0.06))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawArc(QRectF(0.72, -1.02, 0.3, 0.28), 160 * 16, -250 * 16)
        p.drawLine(QPointF(0.87, -0.74), QPointF(0.87, -0.64))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(alpha(QColor("#d9d2ff"), s.question))
        p.drawEllipse(QPointF(0.87, -0.53), 0.04, 0.04)
    if s.think_dots > 0.01:
        p.setPen(Qt.PenStyle.NoPen)
        for k, (tx, ty, r) in enumerate(((0.78, -0.78, 0.05), (0.93, -0.95, 0.075), (1.12, -1.12, 0.11))):
            pulse = 0.7 + 0.3 * math.sin(phase * 3.0 - k * 0.9)
            p.setBrush(alpha(QColor("#e8e4ff"), s.think_dots * pulse))
            p.drawEllipse(QPointF(tx, ty), r, r)
    if s.anger_mark > 0.01:
        p.setPen(round_pen(alpha(ANGER, s.anger_mark), 0.045))
        p.setBrush(Qt.BrushStyle.NoBrush)
        c = QPointF(0.72, -0.7)
        for dx, dy, start in ((-1, -1, 270), (1, -1, 180), (1, 1, 90), (-1, 1, 0)):
            p.drawArc(QRectF(c.x() + dx * 0.1 - 0.07, c.y() + dy * 0.1 - 0.07, 0.14, 0.14),
                      start * 16, 90 * 16)


def _heart(p: QPainter, c: QPointF, r: float) -> None:
    path = QPainterPath(QPointF(c.x(), c.y() + r))
    path.cubicTo(QPointF(c.x() - r * 1.6, c.y() - r * 0.2), QPointF(c.x() - r * 0.8, c.y() - r * 1.3),
                 QPointF(c.x(), c.y() - r * 0.45))
    path.cubicTo(QPointF(c.x() + r * 0.8, c.y() - r * 1.3), QPointF(c.x() + r * 1.6, c.y() - r * 0.2),
                 QPointF(c.x(), c.y() + r))
    p.drawPath(path)


def _star(p: QPainter, c: QPointF, r: float) -> None:
    # Four points joined by curves pulled towards the centre: a twinkle.
    tips = [QPointF(c.x(), c.y() - r), QPointF(c.x() + r, c.y()),
            QPointF(c.x(), c.y() + r), QPointF(c.x() - r, c.y())]
    path = QPainterPath(tips[0])
    for tip in tips[1:] + tips[:1]:
        path.quadTo(c, tip)
    p.drawPath(path)


RING_STEPS = 8
"""Breath and loudness are drawn in this many steps: no one sees finer, and few steps mean
few ring images to keep."""


def _step(value: float) -> float:
    return round(max(0.0, min(1.0, value)) * RING_STEPS) / RING_STEPS


def breath_step(phase: float) -> float:
    """How far the listening ring has breathed out, `phase` seconds into her life, in steps."""
    return _step(0.5 + 0.5 * math.sin(phase * 3.0))


def ring_shape(f: FaceFrame) -> tuple | None:
    """The listening or speaking ring as (state, alpha, pen width, rx, ry), in steps; None
    for no ring or a spinning one."""
    if f.state == "listening":
        # A breathing ring that swells with her hearing your voice: the listening cue.
        pulse, level = breath_step(f.phase), _step(f.listen_level)
        return ("listening", 0.35 + 0.35 * pulse, 0.03 + 0.06 * level, 1.1 + 0.03 * pulse + 0.06 * level, 1.08)
    if f.state == "speaking":
        level = _step(f.speech_level)
        return ("speaking", 0.25 + 0.5 * level, 0.03, 1.1 + 0.05 * level, 1.08 + 0.05 * level)
    return None


def _paint_ring(p: QPainter, shape: tuple, centre: QPointF) -> None:
    state, strength, width, rx, ry = shape
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.setPen(round_pen(alpha(STATE_COLORS[state], strength), width))
    p.drawEllipse(centre, rx, ry)


class RingCache:
    """The listening and speaking rings as images, one per step: a thick antialiased ellipse
    is the costliest stroke of a frame, and while she listens it is drawn 20 times a second."""

    SIZE = 12
    """About 4 MB at the window's usual size."""
    HALF = 1.25

    def __init__(self) -> None:
        self._images: OrderedDict[tuple, QImage] = OrderedDict()

    def draw(self, p: QPainter, shape: tuple, bob: float, scale: float, ratio: float) -> None:
        key = (shape, round(scale, 1), ratio)
        image = self._images.get(key)
        if image is None:
            size = int(math.ceil(2 * self.HALF * scale * ratio))
            image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
            image.setDevicePixelRatio(ratio)
            image.fill(Qt.GlobalColor.transparent)
            painter = QPainter(image)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
            painter.translate(self.HALF * scale, self.HALF * scale)
            painter.scale(scale, scale)
            _paint_ring(painter, shape, QPointF(0, 0))
            painter.end()
            self._images[key] = image
            while len(self._images) > self.SIZE:
                self._images.popitem(last=False)
        else:
            self._images.move_to_end(key)
        p.save()
        p.scale(1 / scale, 1 / scale)
        p.drawImage(QPointF(-self.HALF * scale, (bob - self.HALF) * scale), image)
        p.restore()


def paint_state_ring(p: QPainter, f: FaceFrame, cache: RingCache | None = None, scale: float = 1.0,
                     ratio: float = 1.0) -> None:
    color = STATE_COLORS.get(f.state)
    if color is None:
        return
    shape = ring_shape(f)
    if shape is not None:
        if cache is not None:
            cache.draw(p, shape, f.bob, scale, ratio)
        else:
            _paint_ring(p, shape, QPointF(0, f.bob))
        return
    # Thinking or working: a spinning arc, slow for thinking, brisker while a tool works.
    p.setBrush(Qt.BrushStyle.NoBrush)
    speed = 180 if f.state == "thinking" else 300
    start = int(-(f.phase * speed) % 360 * 16)
    p.setPen(round_pen(alpha(color, 0.8), 0.04))
    p.drawArc(QRectF(-1.12, -1.1 + f.bob, 2.24, 2.2), start, 90 * 16)
    p.setPen(round_pen(alpha(color, 0.25), 0.04))
    p.drawArc(QRectF(-1.12, -1.1 + f.bob, 2.24, 2.2), start + 180 * 16, 60 * 16)
