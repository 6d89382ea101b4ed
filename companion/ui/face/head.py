"""Paints her head with QPainter in layers, in the head's own (tilted) coordinates: the base (what
lies behind the head, and the head), her features (blush, eyes, brows, tears), her mouth, and
what the character wears over them (a fringe, a moustache); gloom goes on top (extras). Soft
vector shapes, no images, no fonts; face units: the face radius is 1. The widget keeps what did
not change as images (layers.LayerCache).
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QPainter,
    QPainterPath,
    QRadialGradient,
    QTransform,
)

from companion.ui.face.character import Character
from companion.ui.face.expressions import FaceShape
from companion.ui.face.extras import paint_tears
from companion.ui.face.features import paint_behind, paint_front
from companion.ui.face.frame import FaceFrame
from companion.ui.face.paint_tools import alpha, mix, quad, round_pen

ANGRY_SKIN = QColor("#ffb39a")
PALE_SKIN = QColor("#dfe6f5")
EYE = QColor("#2d2946")
TEETH = QColor("#fffaf4")
MOUTH_INSIDE = QColor("#8c3450")
TONGUE = QColor("#ff8ea0")
BLUSH = QColor(255, 120, 150)


def paint_base(p: QPainter, frame: FaceFrame) -> None:
    paint_behind(p, frame.character)
    _paint_head(p, frame.shape, frame.character)


def paint_features(p: QPainter, frame: FaceFrame) -> None:
    s, c = frame.shape, frame.character
    _paint_blush(p, s)
    for side in (-1, 1):
        _paint_eye(p, s, frame, side)
        _paint_brow(p, s, c, side)
    paint_tears(p, s, frame.phase)


def paint_mouth(p: QPainter, frame: FaceFrame) -> None:
    _paint_mouth(p, frame.shape, frame.character, frame.speech_level, frame.phase)


def paint_over(p: QPainter, frame: FaceFrame) -> None:
    paint_front(p, frame.character)


def _paint_head(p: QPainter, s: FaceShape, c: Character) -> None:
    # A soft shadow under the head, then the head with a gentle light from the top left.
    shadow = QRadialGradient(QPointF(0, 1.05), 1.0)
    shadow.setColorAt(0.0, QColor(0, 0, 0, 70))
    shadow.setColorAt(1.0, QColor(0, 0, 0, 0))
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(shadow))
    p.drawEllipse(QRectF(-0.95, 0.78, 1.9, 0.34))
    light = mix(mix(c.skin_light, ANGRY_SKIN, s.flush), PALE_SKIN, s.pale)
    edge = mix(mix(c.skin_edge, QColor("#f08a78"), s.flush), QColor("#b9c3dc"), s.pale)
    gradient = QRadialGradient(QPointF(-0.3, -0.4), 1.6)
    gradient.setColorAt(0.0, light)
    gradient.setColorAt(0.75, mix(light, edge, 0.6))
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
        gradient.setColorAt(0.0, alpha(BLUSH, 0.75 * s.blush))
        gradient.setColorAt(1.0, alpha(BLUSH, 0.0))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QBrush(gradient))
        p.drawEllipse(centre, 0.24, 0.15)
        if s.blush > 0.6:
            # Little hatch marks: the cartoon blush that reads even at icon size.
            p.setPen(round_pen(alpha(QColor("#ff5c86"), (s.blush - 0.6) * 2.0), 0.022))
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
        # Lids are cut out of the eye: a slanted upper lid, a drooping one, a pushed-up cheek.
        closure = min(1.0, s.lid_drop + f.blink)
        inner = -side  # +x on the left eye points to her nose
        # The upper lid is a straight line, y = lid_at + lid_rise * (x - cx).
        lid_at = cy - ry + ry * 0.42 * abs(s.lid_slant) + 2 * ry * closure
        lid_rise = ry * 0.42 * s.lid_slant * inner / rx

        def lid_y(x: float) -> float:
            return lid_at + lid_rise * (x - cx)

        cut = below_line(QRectF(cx - rx, cy - ry, 2 * rx, 2 * ry), lid_at, lid_rise)
        if s.lower_lid > 0.01:
            cheek = QPainterPath()
            cheek.addEllipse(QPointF(cx, cy + ry * (2.6 - 1.6 * s.lower_lid)), rx * 2.2, ry * 1.5)
            cut = _subtract(cut, cheek)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(alpha(EYE, open_alpha))
        p.drawPath(cut)
        shine = s.shine
        hx = cx - rx * 0.3 + s.gaze_x * rx * 0.25
        hy = cy - ry * 0.35 + s.gaze_y * ry * 0.2
        p.setBrush(alpha(QColor(255, 255, 255), open_alpha))
        for spot in (QRectF(hx - 0.046 * shine, hy - 0.054 * shine, 0.092 * shine, 0.108 * shine),
                     QRectF(cx + rx * 0.35 - 0.02 * shine, cy + ry * 0.4 - 0.02 * shine, 0.04 * shine, 0.04 * shine)):
            if cut.contains(spot):
                p.drawEllipse(spot)  # the usual case, and clipping is a paint's costliest step
            else:
                p.save()
                p.setClipPath(cut)  # a lid coming down over the shine
                p.drawEllipse(spot)
                p.restore()
        # A faint violet glow at the bottom of the iris gives the eye depth: the eye filled
        # with a gradient that fades out on an ellipse around the iris' lower part.
        glow = QRadialGradient(QPointF(0, 0), 1.0)
        glow.setColorAt(0.0, alpha(f.character.iris_glow, 0.55 * open_alpha))
        glow.setColorAt(1.0, alpha(f.character.iris_glow, 0.0))
        brush = QBrush(glow)
        brush.setTransform(QTransform.fromTranslate(cx, cy + ry * 0.8).scale(rx, ry * 0.6))
        p.setBrush(brush)
        p.drawPath(cut)
        if closure > 0.45:
            # A shut or heavy lid still shows as a soft lash line.
            y = lid_y(cx) if closure < 1.0 else cy + ry * 0.55
            y = min(y, cy + ry * 0.7)
            p.setPen(round_pen(alpha(EYE, open_alpha * min(1.0, (closure - 0.45) * 3)), 0.035))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawPolyline(quad(QPointF(cx - rx * 1.05, y - 0.01), QPointF(cx, y + 0.05),
                                 QPointF(cx + rx * 1.05, y - 0.01)))
    if s.eye_smile > 0.01:
        p.setPen(round_pen(alpha(EYE, s.eye_smile), 0.052))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawPolyline(quad(QPointF(cx - rx * 1.1, cy + 0.04), QPointF(cx, cy - 0.19),
                             QPointF(cx + rx * 1.1, cy + 0.04)))
    if s.eye_squeeze > 0.01:
        # > on her right side of the picture's left eye, < on the other: squeezed shut.
        p.setPen(round_pen(alpha(EYE, s.eye_squeeze), 0.052))
        p.setBrush(Qt.BrushStyle.NoBrush)
        tip = QPointF(cx - side * rx * 0.9, cy)
        p.drawPolyline([QPointF(cx + side * rx, cy - 0.11), tip, QPointF(cx + side * rx, cy + 0.11)])


def below_line(ellipse: QRectF, at: float, rise: float) -> QPainterPath:
    """The part of `ellipse` below the line y = at + rise * (x - centre x), as an elliptic arc
    and its chord: exact, and a tenth of the cost of a path subtraction (which Qt does on
    flattened curves)."""
    centre, rx, ry = ellipse.center(), ellipse.width() / 2, ellipse.height() / 2
    path = QPainterPath()
    # A point of the ellipse at angle a (y down) is below the line where
    # ry sin a - rise rx cos a > at - cy, that is R sin(a - d) > at - cy.
    reach = math.hypot(ry, rise * rx)
    k = (at - centre.y()) / reach
    if k <= -1.0:
        path.addEllipse(ellipse)
    elif k < 1.0:
        start = math.atan2(rise * rx, ry) + math.asin(k)
        sweep = math.pi - 2 * math.asin(k)
        path.moveTo(centre.x() + rx * math.cos(start), centre.y() + ry * math.sin(start))
        # Qt's angles turn counter-clockwise on screen, ours (y down) clockwise.
        path.arcTo(ellipse, -math.degrees(start), -math.degrees(sweep))
        path.closeSubpath()
    return path


def _paint_brow(p: QPainter, s: FaceShape, c: Character, side: int) -> None:
    cx = side * 0.38
    cy = -0.37 + s.brow_y - (s.brow_raise_left if side < 0 else 0.0) + max(0.0, s.eye_height - 1) * 0.12
    lift = math.sin(math.radians(s.brow_angle)) * 0.11
    inner = QPointF(cx - side * 0.12, cy - lift)
    outer = QPointF(cx + side * 0.12, cy + lift)
    control = QPointF(cx, cy - s.brow_arch * 0.08)
    p.setPen(round_pen(c.brow, c.brow_width))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawPolyline(quad(inner, control, outer, 10))


def _mouth_edges(s: FaceShape, level: float, phase: float = 0.0) -> tuple[list[QPointF], list[QPointF], float]:
    # While she speaks the mouth moves between a wide "ee" and a round "oo", not only open
    # and shut: the loudness opens it, a quick drift changes its shape.
    vowel = 0.5 + 0.3 * math.sin(phase * 7.3) + 0.2 * math.sin(phase * 12.1 + 1.0) if level > 0.01 else 0.5
    opening = min(1.4, s.mouth_open + level * (1.0 + 0.6 * vowel))
    width = s.mouth_width * 1.3 + level * (0.18 - 0.34 * vowel)
    y0 = 0.42 + s.mouth_y
    corner = -s.mouth_curve * 0.07
    left = QPointF(-width / 2, y0 + corner + s.mouth_skew * 0.04)
    right = QPointF(width / 2, y0 + corner - s.mouth_skew * 0.04)
    upper = quad(left, QPointF(0, y0 + s.mouth_curve * 0.09 - opening * 0.07), right, 16)
    # Speech drops the jaw further than any still expression opens it.
    lower = quad(left, QPointF(0, y0 + s.mouth_curve * 0.09 + opening * 0.32 + level * 0.34), right, 16)
    if s.mouth_wave > 0.01:
        for points in (upper, lower):
            for i, pt in enumerate(points):
                edge = math.sin(math.pi * i / (len(points) - 1))  # corners stay put
                pt.setY(pt.y() + s.mouth_wave * 0.022 * math.sin(i / (len(points) - 1) * 4 * math.pi) * edge)
    return upper, lower, opening


def _paint_mouth(p: QPainter, s: FaceShape, c: Character, level: float, phase: float = 0.0) -> None:
    upper, lower, opening = _mouth_edges(s, level, phase)
    pen = round_pen(c.line, 0.042)
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
    if level > 0.15 and opening > 0.3:
        # A row of upper teeth shows when she opens wide to speak.
        top = min(pt.y() for pt in upper)
        p.setBrush(TEETH)
        p.drawRect(QRectF(-1.0, top - 0.05, 2.0, 0.05 + 0.05 * opening))
    p.restore()


