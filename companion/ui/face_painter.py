"""Draws one frame of her face with QPainter: soft vector shapes, no images, no fonts.

`paint_face(painter, rect, frame)` is pure drawing: the widget calls it every frame and
`companion face` calls it once on an offscreen image. Face units: the face radius is 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QImage,
    QLinearGradient,
    QPainter,
    QPainterPath,
    QPen,
    QRadialGradient,
    QTransform,
)

from companion.ui.expressions import FaceShape

BACKGROUND_TOP = QColor("#2f3454")
BACKGROUND_BOTTOM = QColor("#4b4372")
SKIN_LIGHT = QColor("#fff1e3")
SKIN_EDGE = QColor("#f6c9a8")
ANGRY_SKIN = QColor("#ffb39a")
PALE_SKIN = QColor("#dfe6f5")
EYE = QColor("#2d2946")
BROW = QColor("#7a5448")
LINE = QColor("#6a3f4c")
MOUTH_INSIDE = QColor("#8c3450")
TONGUE = QColor("#ff8ea0")
BLUSH = QColor(255, 120, 150)
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


@dataclass(frozen=True)
class FaceFrame:
    """Everything one painted frame needs: the blended shape plus the live animation."""

    shape: FaceShape
    blink: float = 0.0
    """0 eyes open .. 1 shut."""
    speech_level: float = 0.0
    """Lip sync: output audio level 0..1, opens the mouth."""
    listen_level: float = 0.0
    """Microphone level 0..1 while she listens, swells the listening ring."""
    bob: float = 0.0
    sway: float = 0.0
    state: str = "idle"
    phase: float = 0.0
    """Seconds since start, for drifting decorations and spinners."""


def _mix(a: QColor, b: QColor, t: float) -> QColor:
    t = max(0.0, min(1.0, t))
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
        a.alphaF() + (b.alphaF() - a.alphaF()) * t,
    )


def _alpha(color: QColor, alpha: float) -> QColor:
    c = QColor(color)
    c.setAlphaF(max(0.0, min(1.0, alpha)) * color.alphaF())
    return c


def _round_pen(color: QColor, width: float) -> QPen:
    pen = QPen(color, width)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    return pen


def _quad(p0: QPointF, c: QPointF, p1: QPointF, n: int = 14) -> list[QPointF]:
    points = []
    for i in range(n + 1):
        t = i / n
        u = 1 - t
        points.append(QPointF(u * u * p0.x() + 2 * u * t * c.x() + t * t * p1.x(),
                              u * u * p0.y() + 2 * u * t * c.y() + t * t * p1.y()))
    return points


def paint_background(p: QPainter, rect: QRectF) -> None:
    gradient = QLinearGradient(rect.topLeft(), rect.bottomLeft())
    gradient.setColorAt(0.0, BACKGROUND_TOP)
    gradient.setColorAt(1.0, BACKGROUND_BOTTOM)
    p.fillRect(rect, QBrush(gradient))


class HeadCache:
    """The head (shadow, skin, sheen) rendered once per size and skin tone: the costliest layer.

    The widget keeps one; a still picture does without. The head is a circle lit from a
    fixed light, so one image serves every tilt.
    """

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._image: QImage | None = None

    def draw(self, p: QPainter, s: FaceShape, scale: float, ratio: float) -> None:
        key = (round(scale, 1), round(s.flush, 2), round(s.pale, 2), ratio)
        if key != self._key or self._image is None:
            size = int(math.ceil(2.6 * scale * ratio))
            image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
            image.setDevicePixelRatio(ratio)
            image.fill(Qt.GlobalColor.transparent)
            painter = QPainter(image)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
            painter.translate(1.3 * scale, 1.3 * scale)
            painter.scale(scale, scale)
            _paint_head(painter, s)
            painter.end()
            self._key, self._image = key, image
        p.save()
        p.scale(1 / scale, 1 / scale)  # draw pixel for pixel: no resampling blur
        p.drawImage(QPointF(-1.3 * scale, -1.3 * scale), self._image)
        p.restore()


def paint_face(p: QPainter, rect: QRectF, frame: FaceFrame, *, background: bool = True,
               head_cache: HeadCache | None = None) -> None:
    """Paint `frame` centred in `rect`, scaled to fit."""
    p.save()
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    if background:
        paint_background(p, rect)
    scale = min(rect.width(), rect.height()) * 0.34
    p.translate(rect.center())
    p.scale(scale, scale)
    s = frame.shape
    _paint_state_ring(p, frame)
    p.translate(0, frame.bob)
    if head_cache is not None:
        head_cache.draw(p, s, scale, p.device().devicePixelRatioF() if p.device() else 1.0)
    p.rotate(s.head_tilt + frame.sway)
    if head_cache is None:
        _paint_head(p, s)
    _paint_blush(p, s)
    for side in (-1, 1):
        _paint_eye(p, s, frame, side)
        _paint_brow(p, s, side)
    _paint_tears(p, s, frame.phase)
    _paint_mouth(p, s, frame.speech_level)
    _paint_gloom(p, s)
    p.rotate(-(s.head_tilt + frame.sway))
    _paint_decorations(p, s, frame.phase)
    p.restore()


def _paint_head(p: QPainter, s: FaceShape) -> None:
    # A soft shadow under the head, then the head with a gentle light from the top left.
    shadow = QRadialGradient(QPointF(0, 1.05), 1.0)
    shadow.setColorAt(0.0, QColor(0, 0, 0, 70))
    shadow.setColorAt(1.0, QColor(0, 0, 0, 0))
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(shadow))
    p.drawEllipse(QRectF(-0.95, 0.78, 1.9, 0.34))
    light = _mix(_mix(SKIN_LIGHT, ANGRY_SKIN, s.flush), PALE_SKIN, s.pale)
    edge = _mix(_mix(SKIN_EDGE, QColor("#f08a78"), s.flush), QColor("#b9c3dc"), s.pale)
    gradient = QRadialGradient(QPointF(-0.3, -0.4), 1.6)
    gradient.setColorAt(0.0, light)
    gradient.setColorAt(0.75, _mix(light, edge, 0.6))
    gradient.setColorAt(1.0, edge)
    p.setBrush(QBrush(gradient))
    p.drawEllipse(QRectF(-1.0, -0.97, 2.0, 1.94))
    # A little sheen on the forehead.
    sheen = QRadialGradient(QPointF(-0.35, -0.55), 0.35)
    sheen.setColorAt(0.0, QColor(255, 255, 255, 110))
    sheen.setColorAt(1.0, QColor(255, 255, 255, 0))
    p.setBrush(QBrush(sheen))
    p.drawEllipse(QRectF(-0.75, -0.9, 0.8, 0.7))


def _paint_blush(p: QPainter, s: FaceShape) -> None:
    if s.blush <= 0.01:
        return
    for side in (-1, 1):
        centre = QPointF(side * 0.6, 0.24)
        gradient = QRadialGradient(centre, 0.22)
        gradient.setColorAt(0.0, _alpha(BLUSH, 0.75 * s.blush))
        gradient.setColorAt(1.0, _alpha(BLUSH, 0.0))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QBrush(gradient))
        p.drawEllipse(centre, 0.24, 0.15)
        if s.blush > 0.6:
            # Little hatch marks: the cartoon blush that reads even at icon size.
            p.setPen(_round_pen(_alpha(QColor("#ff5c86"), (s.blush - 0.6) * 2.0), 0.022))
            for k in (-1, 0, 1):
                x = centre.x() + k * 0.07
                p.drawLine(QPointF(x + 0.025, centre.y() - 0.04), QPointF(x - 0.025, centre.y() + 0.04))


_UP = QTransform.fromScale(1000.0, 1000.0)
_DOWN = QTransform.fromScale(0.001, 0.001)


def _subtract(a: QPainterPath, b: QPainterPath) -> QPainterPath:
    # Qt flattens curves for boolean operations with a tolerance in path units; our units are
    # face radii, so work at 1000x or the eyes come out as hexagons.
    return _DOWN.map(_UP.map(a).subtracted(_UP.map(b)))


def _paint_eye(p: QPainter, s: FaceShape, f: FaceFrame, side: int) -> None:
    cx = side * 0.38 + s.gaze_x * 0.03
    cy = -0.04 + s.gaze_y * 0.03
    rx = 0.14 * s.eye_width
    ry = 0.185 * s.eye_height
    open_alpha = max(0.0, 1.0 - s.eye_smile - s.eye_squeeze)
    if open_alpha > 0.01:
        eye = QPainterPath()
        eye.addEllipse(QPointF(cx, cy), rx, ry)
        # Lids are cut out of the eye: a slanted upper lid, a drooping one, a pushed-up cheek.
        closure = min(1.0, s.lid_drop + f.blink)
        inner = -side  # +x on the left eye points to her nose
        top = cy - ry
        slant = s.lid_slant

        def lid_y(x: float) -> float:
            u = (x - cx) * inner / rx
            tilt = max(slant, 0) * (1 + u) + max(-slant, 0) * (1 - u)
            return top + ry * 0.42 * tilt + 2 * ry * closure

        lid = QPainterPath()
        lid.moveTo(cx - 2 * rx, cy - 3 * ry)
        lid.lineTo(cx + 2 * rx, cy - 3 * ry)
        lid.lineTo(cx + 2 * rx, lid_y(cx + 2 * rx))
        lid.lineTo(cx - 2 * rx, lid_y(cx - 2 * rx))
        lid.closeSubpath()
        cut = _subtract(eye, lid)
        if s.lower_lid > 0.01:
            cheek = QPainterPath()
            cheek.addEllipse(QPointF(cx, cy + ry * (2.6 - 1.6 * s.lower_lid)), rx * 2.2, ry * 1.5)
            cut = _subtract(cut, cheek)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(_alpha(EYE, open_alpha))
        p.drawPath(cut)
        p.save()
        p.setClipPath(cut)
        shine = s.shine
        hx = cx - rx * 0.3 + s.gaze_x * rx * 0.25
        hy = cy - ry * 0.35 + s.gaze_y * ry * 0.2
        p.setBrush(_alpha(QColor(255, 255, 255), open_alpha))
        p.drawEllipse(QPointF(hx, hy), 0.046 * shine, 0.054 * shine)
        p.drawEllipse(QPointF(cx + rx * 0.35, cy + ry * 0.4), 0.02 * shine, 0.02 * shine)
        # A faint violet glow at the bottom of the iris gives the eye depth.
        glow = QRadialGradient(QPointF(cx, cy + ry * 0.8), rx)
        glow.setColorAt(0.0, _alpha(QColor("#8f7dff"), 0.55 * open_alpha))
        glow.setColorAt(1.0, _alpha(QColor("#8f7dff"), 0.0))
        p.setBrush(QBrush(glow))
        p.drawEllipse(QPointF(cx, cy + ry * 0.8), rx, ry * 0.6)
        p.restore()
        if closure > 0.45:
            # A shut or heavy lid still shows as a soft lash line.
            y = lid_y(cx) if closure < 1.0 else cy + ry * 0.55
            y = min(y, cy + ry * 0.7)
            p.setPen(_round_pen(_alpha(EYE, open_alpha * min(1.0, (closure - 0.45) * 3)), 0.035))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawPolyline(_quad(QPointF(cx - rx * 1.05, y - 0.01), QPointF(cx, y + 0.05),
                                 QPointF(cx + rx * 1.05, y - 0.01)))
    if s.eye_smile > 0.01:
        p.setPen(_round_pen(_alpha(EYE, s.eye_smile), 0.052))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawPolyline(_quad(QPointF(cx - rx * 1.1, cy + 0.04), QPointF(cx, cy - 0.19),
                             QPointF(cx + rx * 1.1, cy + 0.04)))
    if s.eye_squeeze > 0.01:
        # > on her right side of the picture's left eye, < on the other: squeezed shut.
        p.setPen(_round_pen(_alpha(EYE, s.eye_squeeze), 0.052))
        p.setBrush(Qt.BrushStyle.NoBrush)
        tip = QPointF(cx - side * rx * 0.9, cy)
        p.drawPolyline([QPointF(cx + side * rx, cy - 0.11), tip, QPointF(cx + side * rx, cy + 0.11)])


def _paint_brow(p: QPainter, s: FaceShape, side: int) -> None:
    cx = side * 0.38
    cy = -0.37 + s.brow_y - (s.brow_raise_left if side < 0 else 0.0) + max(0.0, s.eye_height - 1) * 0.12
    lift = math.sin(math.radians(s.brow_angle)) * 0.11
    inner = QPointF(cx - side * 0.12, cy - lift)
    outer = QPointF(cx + side * 0.12, cy + lift)
    control = QPointF(cx, cy - s.brow_arch * 0.08)
    p.setPen(_round_pen(BROW, 0.058))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawPolyline(_quad(inner, control, outer, 10))


def _mouth_edges(s: FaceShape, level: float) -> tuple[list[QPointF], list[QPointF], float]:
    opening = min(1.0, s.mouth_open + level * 0.7)
    width = s.mouth_width * 1.3 + level * 0.06
    y0 = 0.42 + s.mouth_y
    corner = -s.mouth_curve * 0.07
    left = QPointF(-width / 2, y0 + corner + s.mouth_skew * 0.04)
    right = QPointF(width / 2, y0 + corner - s.mouth_skew * 0.04)
    upper = _quad(left, QPointF(0, y0 + s.mouth_curve * 0.09 - opening * 0.07), right, 16)
    lower = _quad(left, QPointF(0, y0 + s.mouth_curve * 0.09 + opening * 0.32), right, 16)
    if s.mouth_wave > 0.01:
        for points in (upper, lower):
            for i, pt in enumerate(points):
                edge = math.sin(math.pi * i / (len(points) - 1))  # corners stay put
                pt.setY(pt.y() + s.mouth_wave * 0.022 * math.sin(i / (len(points) - 1) * 4 * math.pi) * edge)
    return upper, lower, opening


def _paint_mouth(p: QPainter, s: FaceShape, level: float) -> None:
    upper, lower, opening = _mouth_edges(s, level)
    pen = _round_pen(LINE, 0.042)
    if opening < 0.04:
        p.setPen(pen)
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawPolyline(upper)
        return
    path = QPainterPath(upper[0])
    for pt in upper[1:]:
        path.lineTo(pt)
    for pt in reversed(lower[:-1]):
        path.lineTo(pt)
    path.closeSubpath()
    p.setPen(pen)
    p.setBrush(MOUTH_INSIDE)
    p.drawPath(path)
    p.save()
    p.setClipPath(path)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(TONGUE)
    bottom = max(pt.y() for pt in lower)
    p.drawEllipse(QPointF(0, bottom + 0.01), s.mouth_width * 0.36 + 0.02, 0.06 + opening * 0.05)
    p.restore()


def _paint_tears(p: QPainter, s: FaceShape, phase: float) -> None:
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
        gradient.setColorAt(0.0, _alpha(TEAR, 0.95 * s.tears))
        gradient.setColorAt(1.0, _alpha(TEAR, 0.35 * s.tears))
        p.setBrush(QBrush(gradient))
        p.drawPath(stream)
        # A drop falls off the chin of each stream, over and over.
        t = (phase * 0.9 + (0.5 if side > 0 else 0.0)) % 1.0
        p.setBrush(_alpha(TEAR, s.tears * (1.0 - t)))
        _drop(p, QPointF(x + side * 0.035, 0.78 + t * 0.22), 0.035)


def _drop(p: QPainter, tip_below: QPointF, r: float) -> None:
    path = QPainterPath(QPointF(tip_below.x(), tip_below.y() - 2.2 * r))
    path.cubicTo(QPointF(tip_below.x() + r * 1.4, tip_below.y() - r * 0.4),
                 QPointF(tip_below.x() + r, tip_below.y() + r),
                 QPointF(tip_below.x(), tip_below.y() + r))
    path.cubicTo(QPointF(tip_below.x() - r, tip_below.y() + r),
                 QPointF(tip_below.x() - r * 1.4, tip_below.y() - r * 0.4),
                 QPointF(tip_below.x(), tip_below.y() - 2.2 * r))
    p.drawPath(path)


def _paint_gloom(p: QPainter, s: FaceShape) -> None:
    if s.pale <= 0.01:
        return
    p.setPen(_round_pen(_alpha(QColor("#6f7fb8"), 0.8 * s.pale), 0.022))
    for x in (-0.3, -0.15, 0.0, 0.15, 0.3):
        p.drawLine(QPointF(x, -0.85 + abs(x) * 0.3), QPointF(x, -0.6 + abs(x) * 0.2))


def _paint_decorations(p: QPainter, s: FaceShape, phase: float) -> None:
    if s.sweat > 0.01:
        p.setPen(_round_pen(_alpha(QColor("#4a9bd6"), s.sweat), 0.015))
        p.setBrush(_alpha(QColor("#bfe6ff"), s.sweat))
        _drop(p, QPointF(0.78, -0.45), 0.07)
    if s.zzz > 0.01:
        for k in range(3):
            t = (phase * 0.35 + k / 3) % 1.0
            size = 0.1 + 0.08 * k
            x = 0.75 + t * 0.35 + k * 0.05
            y = -0.75 - t * 0.45 - k * 0.1
            p.setPen(_round_pen(_alpha(QColor("#cfd8ff"), s.zzz * (1 - t * 0.7)), 0.03 + 0.008 * k))
            p.drawPolyline([QPointF(x, y), QPointF(x + size, y), QPointF(x, y + size),
                            QPointF(x + size, y + size)])
    if s.hearts > 0.01:
        for k, (hx, hy, r) in enumerate(((0.85, -0.6, 0.12), (1.08, -0.25, 0.08), (-0.9, -0.7, 0.09))):
            bob = math.sin(phase * 2.2 + k * 1.7) * 0.04
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(_alpha(HEART, s.hearts))
            _heart(p, QPointF(hx, hy + bob), r)
    if s.sparkles > 0.01:
        for k, (sx, sy, r) in enumerate(((0.86, -0.72, 0.13), (-0.9, -0.55, 0.09), (1.05, -0.2, 0.07))):
            twinkle = 0.75 + 0.25 * math.sin(phase * 4.0 + k * 2.1)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(_alpha(SPARKLE, s.sparkles * twinkle))
            _star(p, QPointF(sx, sy), r * twinkle)
    if s.question > 0.01:
        p.setPen(_round_pen(_alpha(QColor("#d9d2ff"), s.question), 0.06))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawArc(QRectF(0.72, -1.02, 0.3, 0.28), 160 * 16, -250 * 16)
        p.drawLine(QPointF(0.87, -0.74), QPointF(0.87, -0.64))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(_alpha(QColor("#d9d2ff"), s.question))
        p.drawEllipse(QPointF(0.87, -0.53), 0.04, 0.04)
    if s.think_dots > 0.01:
        p.setPen(Qt.PenStyle.NoPen)
        for k, (tx, ty, r) in enumerate(((0.78, -0.78, 0.05), (0.93, -0.95, 0.075), (1.12, -1.12, 0.11))):
            pulse = 0.7 + 0.3 * math.sin(phase * 3.0 - k * 0.9)
            p.setBrush(_alpha(QColor("#e8e4ff"), s.think_dots * pulse))
            p.drawEllipse(QPointF(tx, ty), r, r)
    if s.anger_mark > 0.01:
        p.setPen(_round_pen(_alpha(ANGER, s.anger_mark), 0.045))
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


def _paint_state_ring(p: QPainter, f: FaceFrame) -> None:
    color = STATE_COLORS.get(f.state)
    if color is None:
        return
    p.setBrush(Qt.BrushStyle.NoBrush)
    if f.state == "listening":
        # A breathing ring that swells with her hearing your voice: the listening cue.
        pulse = 0.5 + 0.5 * math.sin(f.phase * 3.0)
        width = 0.03 + 0.06 * f.listen_level
        p.setPen(_round_pen(_alpha(color, 0.35 + 0.35 * pulse), width))
        p.drawEllipse(QPointF(0, f.bob), 1.1 + 0.03 * pulse + 0.06 * f.listen_level, 1.08)
    elif f.state in ("thinking", "working"):
        # A spinning arc: slow for thinking, brisker while a tool works.
        speed = 180 if f.state == "thinking" else 300
        start = int(-(f.phase * speed) % 360 * 16)
        p.setPen(_round_pen(_alpha(color, 0.8), 0.04))
        p.drawArc(QRectF(-1.12, -1.1 + f.bob, 2.24, 2.2), start, 90 * 16)
        p.setPen(_round_pen(_alpha(color, 0.25), 0.04))
        p.drawArc(QRectF(-1.12, -1.1 + f.bob, 2.24, 2.2), start + 180 * 16, 60 * 16)
    elif f.state == "speaking":
        p.setPen(_round_pen(_alpha(color, 0.25 + 0.5 * f.speech_level), 0.03))
        p.drawEllipse(QPointF(0, f.bob), 1.1 + 0.05 * f.speech_level, 1.08 + 0.05 * f.speech_level)
