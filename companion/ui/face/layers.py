"""Her face's layers kept as images between frames: most of a frame is the last one again.

A still face (eyes open, not speaking) is one image; while she speaks, her face without the
mouth is one image and only the mouth is drawn on it. While she blinks, cries or turns from
one expression to the next, what lies behind and on the head still holds: the base (hair
behind, the head) and the over layer (a fringe, a moustache) are images, and her features
are drawn between them. Each image is cut to the bands of rows where it has pixels, so a
fringe or a bow tie costs its own size, not the face's.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np
from PySide6.QtCore import QPointF, QRect, Qt
from PySide6.QtGui import QImage, QPainter

from companion.ui.face.expressions import FaceShape
from companion.ui.face.extras import paint_gloom
from companion.ui.face.frame import FaceFrame
from companion.ui.face.head import paint_base, paint_features, paint_mouth, paint_over

LAYER_HALF = 1.5
"""Half the side of a layer before cropping, in face radii: room for Pip's ears and horns."""
BAND_GAP_PX = 4
"""Empty rows that split a layer into separately drawn bands (a fringe apart from a bow tie)."""


@dataclass(frozen=True)
class Piece:
    """One cropped band of a layer and where its top-left corner sits, in pixels from the
    face's centre before tilting."""

    image: QImage
    x: float
    y: float


class LayerCache:
    """The widget's layer images, the most recently used of each kind kept.

    Each frame draws from the most complete image that still holds: a still face (eyes
    open, mouth at rest) is one image; while she speaks, her face without the mouth is one
    image and the mouth is drawn on it; while she blinks, cries or changes expression, only
    the base and what she wears are images. An image is made once what it shows has held
    for two frames (the target of an expression change holds from its first frame), and at
    most one per frame: making one costs about a whole paint. During a change the base is
    the old one fading into the new one: the head's colours change linearly, so the fade is
    the blend.
    """

    SIZES = {"still": 6, "features": 6, "base": 4, "over": 2}
    """Images kept of each kind: a still face and a face without its mouth per recent
    expression, the head in each of its colours (angry, sad and scared change them), what
    the character wears."""

    def __init__(self) -> None:
        self._layers: dict[str, OrderedDict[tuple, tuple[Piece, ...]]] = {
            kind: OrderedDict() for kind in self.SIZES}
        self._last_key: dict[str, tuple] = {}
        self._may_render = True
        self.renders = 0
        """Layer images made so far (tests count them)."""

    def draw(self, p: QPainter, frame: FaceFrame, tilt: float, scale: float, ratio: float) -> None:
        """Draw `frame`'s face at `tilt` around the painter's origin (face units)."""
        s = frame.shape
        size = (frame.character.name, round(scale, 1), ratio)
        self._may_render = True
        # Outside a change the head is always kept at hand: the next change fades from it.
        base = None if frame.settling else self._layer("base", (*_base_key(s), *size), frame, scale, ratio)
        settled = frame.settling is None and frame.blink < 0.01 and s.tears <= 0.01
        if settled and frame.speech_level <= 0.01:
            still = self._layer("still", (s, *size), frame, scale, ratio)
            if still is not None:
                self._draw_pieces(p, still, tilt, scale)
                return
        features = self._layer("features", (s, *size), frame, scale, ratio) if settled else None
        if features is not None:
            self._draw_pieces(p, features, tilt, scale)
        else:
            if not self._draw_base(p, frame, base, size, tilt, scale, ratio):
                _painted_tilted(p, tilt, paint_base, frame)
            _painted_tilted(p, tilt, paint_features, frame)
        _painted_tilted(p, tilt, paint_mouth, frame)
        over = self._layer("over", size, frame, scale, ratio)
        if over is None:
            _painted_tilted(p, tilt, paint_over, frame)
        else:
            self._draw_pieces(p, over, tilt, scale)
        if s.pale > 0.01:
            _painted_tilted(p, tilt, _paint_gloom, frame)

    def _draw_base(self, p: QPainter, frame: FaceFrame, base: tuple[Piece, ...] | None, size: tuple,
                   tilt: float, scale: float, ratio: float) -> bool:
        """Draw the head from its images (`base` outside a change); False when they are not
        at hand yet."""
        if frame.settling is None:
            if base is not None:
                self._draw_pieces(p, base, tilt, scale)
            return base is not None
        old, new, progress = frame.settling
        before = self._cached("base", old, size)
        after = self._layer("base", (*_base_key(new), *size), replace(frame, shape=new), scale, ratio,
                            held=True)
        if before is None or after is None:
            return False
        self._draw_pieces(p, before, tilt, scale)
        if after is not before:
            self._draw_pieces(p, after, tilt, scale, opacity=progress)
        return True

    def _layer(self, kind: str, key: tuple, frame: FaceFrame, scale: float, ratio: float, *,
               held: bool = False) -> tuple[Piece, ...] | None:
        layers, key = self._layers[kind], (kind, *key)
        held = held or self._last_key.get(kind) == key
        self._last_key[kind] = key
        pieces = layers.get(key)
        if pieces is not None:
            layers.move_to_end(key)
        elif held and self._may_render:
            self._may_render = False
            pieces = layers[key] = self._render(kind, frame, scale, ratio)
            self.renders += 1
            while len(layers) > self.SIZES[kind]:
                layers.popitem(last=False)
        return pieces

    def _render(self, kind: str, frame: FaceFrame, scale: float, ratio: float) -> tuple[Piece, ...]:
        # Built on the other layers where they are at hand: a still face then costs little more
        # than drawing its features, on an image the size of the head and what she wears (her
        # features never reach beyond them).
        size = (frame.character.name, round(scale, 1), ratio)
        found = {layer: self._cached(layer, frame.shape, size) for layer in _LAYERS[kind]}
        enclosing = [found[layer] for layer in _BOUNDED_BY.get(kind, ())]
        bounded = bool(enclosing) and all(pieces is not None for pieces in enclosing)
        if bounded:
            pieces = [piece for layer in enclosing for piece in layer]
            left, top = min(p.x for p in pieces), min(p.y for p in pieces)
            width = round(max(p.x * ratio + p.image.width() for p in pieces) - left * ratio)
            height = round(max(p.y * ratio + p.image.height() for p in pieces) - top * ratio)
            origin = (-left, -top)
        else:
            # The face's centre on a pixel corner: drawn back untilted at a whole-pixel spot,
            # the image then lands pixel for pixel, without resampling.
            centre = math.ceil(LAYER_HALF * scale * ratio) / ratio
            width = height = int(round(2 * centre * ratio))
            origin = (centre, centre)
        image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
        image.setDevicePixelRatio(ratio)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.translate(*origin)
        painter.scale(scale, scale)
        for layer in _LAYERS[kind]:
            if found[layer] is None:
                _PAINTERS[layer](painter, frame)
            else:
                self._draw_pieces(painter, found[layer], 0.0, scale)
        painter.end()
        if bounded:
            return (Piece(image, -origin[0], -origin[1]),)
        return crop_to_bands(image, origin[0])

    def _cached(self, layer: str, shape: FaceShape, size: tuple) -> tuple[Piece, ...] | None:
        """The base or over image at hand, without making it; None for any other layer."""
        if layer == "base":
            return self._layers["base"].get(("base", *_base_key(shape), *size))
        if layer == "over":
            return self._layers["over"].get(("over", *size))
        return None

    @staticmethod
    def _draw_pieces(p: QPainter, pieces: tuple[Piece, ...], tilt: float, scale: float,
                     opacity: float = 1.0) -> None:
        p.save()
        p.rotate(tilt)
        p.scale(1 / scale, 1 / scale)  # pixel for pixel: the images were drawn at this scale
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
        p.setOpacity(opacity)
        for piece in pieces:
            p.drawImage(QPointF(piece.x, piece.y), piece.image)
        p.restore()


def _paint_gloom(p: QPainter, frame: FaceFrame) -> None:
    paint_gloom(p, frame.shape)


_PAINTERS = {"base": paint_base, "features": paint_features, "mouth": paint_mouth, "over": paint_over,
             "gloom": _paint_gloom}
_LAYERS = {
    "still": ("base", "features", "mouth", "over", "gloom"),
    "features": ("base", "features"),
    "base": ("base",),
    "over": ("over",),
}
"""What each kind of image shows, bottom to top."""
_BOUNDED_BY = {"still": ("base", "over"), "features": ("base",)}
"""The layers whose images enclose each composite kind (checked by the tests that compare
cached and direct drawing)."""


def _base_key(shape: FaceShape) -> tuple[float, float]:
    """What of a shape the base shows: the head's colours."""
    return round(shape.flush, 2), round(shape.pale, 2)


def _painted_tilted(p: QPainter, tilt: float, paint, frame: FaceFrame) -> None:
    p.save()
    p.rotate(tilt)
    paint(p, frame)
    p.restore()


def crop_to_bands(image: QImage, centre: float) -> tuple[Piece, ...]:
    """The bands of rows of `image` (ARGB32 premultiplied) that have pixels, each cut to its
    own columns, placed relative to `centre` (logical pixels from the top-left corner)."""
    width, height, ratio = image.width(), image.height(), image.devicePixelRatio()
    pixels = np.frombuffer(image.constBits(), np.uint32).reshape(height, image.bytesPerLine() // 4)
    opaque = pixels[:, :width] >= 0x01000000  # alpha is the top byte
    rows = np.flatnonzero(opaque.any(axis=1))
    if rows.size == 0:
        return ()
    splits = np.flatnonzero(np.diff(rows) > BAND_GAP_PX)
    pieces = []
    for top, bottom in zip(np.r_[rows[0], rows[splits + 1]], np.r_[rows[splits], rows[-1]] + 1, strict=True):
        columns = np.flatnonzero(opaque[top:bottom].any(axis=0))
        left, right = int(columns[0]), int(columns[-1]) + 1
        band = image.copy(QRect(left, int(top), right - left, int(bottom - top)))
        band.setDevicePixelRatio(ratio)
        pieces.append(Piece(band, left / ratio - centre, int(top) / ratio - centre))
    return tuple(pieces)
