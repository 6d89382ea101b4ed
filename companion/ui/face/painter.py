"""Draws one whole frame of her face: the background, the state ring, her head's layers (from
the widget's cache of images, or painted directly) and the decorations around her.

`paint_face(painter, rect, frame)` is pure drawing: the widget calls it every frame and
`companion face` calls it once on an offscreen image. Face units: the face radius is 1.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtGui import QBrush, QColor, QLinearGradient, QPainter

from companion.ui.face.extras import RingCache, paint_decorations, paint_gloom, paint_state_ring
from companion.ui.face.frame import FaceFrame
from companion.ui.face.head import paint_base, paint_features, paint_mouth, paint_over
from companion.ui.face.layers import LayerCache

BACKGROUND_TOP = QColor("#2f3454")
BACKGROUND_BOTTOM = QColor("#4b4372")


def paint_background(p: QPainter, rect: QRectF) -> None:
    gradient = QLinearGradient(rect.topLeft(), rect.bottomLeft())
    gradient.setColorAt(0.0, BACKGROUND_TOP)
    gradient.setColorAt(1.0, BACKGROUND_BOTTOM)
    p.fillRect(rect, QBrush(gradient))


def paint_face(p: QPainter, rect: QRectF, frame: FaceFrame, *, background: bool = True,
               layer_cache: LayerCache | None = None, ring_cache: RingCache | None = None) -> None:
    """Paint `frame` centred in `rect`, scaled to fit."""
    p.save()
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    if background:
        paint_background(p, rect)
    scale = face_scale(rect)
    p.translate(rect.center())
    p.scale(scale, scale)
    ratio = p.device().devicePixelRatioF() if p.device() else 1.0
    paint_state_ring(p, frame, ring_cache, scale, ratio)
    p.translate(0, frame.bob)
    tilt = frame.shape.head_tilt + frame.sway
    if layer_cache is not None:
        layer_cache.draw(p, frame, tilt, scale, ratio)
    else:
        p.rotate(tilt)
        paint_base(p, frame)
        paint_features(p, frame)
        paint_mouth(p, frame)
        paint_over(p, frame)
        paint_gloom(p, frame.shape)
        p.rotate(-tilt)
    paint_decorations(p, frame.shape, frame.phase)
    p.restore()


def face_scale(rect: QRectF) -> float:
    """Pixels per face radius for a face fitted into `rect`."""
    return min(rect.width(), rect.height()) * 0.34


def face_bounds(rect: QRectF) -> QRectF:
    """The part of `rect` a frame can change (ring, face, features, decorations)."""
    reach = face_scale(rect) * 1.62
    centre = rect.center()
    return QRectF(centre.x() - reach, centre.y() - reach, 2 * reach, 2 * reach).intersected(rect)
