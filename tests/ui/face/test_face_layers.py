"""Her face drawn from cached layer images looks like her face drawn stroke by stroke, and
while she speaks, blinks or changes expression only what moves is drawn again."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter

from companion.ui.face import layers as face_layers
from companion.ui.face.character import CHARACTERS
from companion.ui.face.expressions import blend, shape_for
from companion.ui.face.frame import FaceFrame
from companion.ui.face.layers import LayerCache, crop_to_bands
from companion.ui.face.painter import paint_face

SIDE = 240


def _paint(frame: FaceFrame, cache: LayerCache | None) -> np.ndarray:
    image = QImage(SIDE, SIDE, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    paint_face(painter, QRectF(0, 0, SIDE, SIDE), frame, layer_cache=cache)
    painter.end()
    data = np.frombuffer(image.constBits(), np.uint8).reshape(SIDE, image.bytesPerLine())
    return data[:, : SIDE * 4].astype(int)


def _cached(frames: list[FaceFrame]) -> tuple[np.ndarray, LayerCache]:
    """The last of `frames` painted by a cache that has seen all of them, as the widget does."""
    cache = LayerCache()
    for frame in frames[:-1]:
        _paint(frame, cache)
    return _paint(frames[-1], cache), cache


def _held(frame: FaceFrame, times: int = 4) -> list[FaceFrame]:
    return [replace(frame, phase=frame.phase + k * 0.016) for k in range(times)]


def _changing(old: str, new: str, step: int) -> list[FaceFrame]:
    a, b = shape_for(old), shape_for(new)
    frames = _held(FaceFrame(shape=a, state="speaking", speech_level=0.5))
    for k in range(1, step + 1):
        t = k / 10
        frames.append(FaceFrame(shape=blend(a, b, t), state="speaking", speech_level=0.5, phase=1 + k * 0.016,
                                settling=(a, b, t)))
    return frames


@pytest.mark.parametrize("character", sorted(CHARACTERS))
@pytest.mark.parametrize("case", ["still", "speaking", "blinking", "crying", "sad and tilted", "still after speaking"])
def test_a_face_drawn_from_cached_layers_looks_like_one_drawn_stroke_by_stroke(qapp, character, case):
    c = CHARACTERS[character]
    frame = {
        "still": FaceFrame(shape=shape_for("happy"), character=c),
        "speaking": FaceFrame(shape=shape_for("excited"), character=c, state="speaking", speech_level=0.7),
        "blinking": FaceFrame(shape=shape_for("neutral"), character=c, blink=0.6),
        "crying": FaceFrame(shape=shape_for("crying"), character=c, speech_level=0.3),
        "sad and tilted": FaceFrame(shape=shape_for("sad"), character=c, sway=1.2, bob=0.01),
        "still after speaking": FaceFrame(shape=shape_for("surprised"), character=c),
    }[case]
    # After speaking, every layer a still face is built on is at hand.
    before = _held(replace(frame, speech_level=0.5)) if case == "still after speaking" else []
    cached, cache = _cached(before + _held(frame))
    assert cache.renders > 0  # the layers were really used
    difference = np.abs(cached - _paint(frame, None))
    assert difference.mean() < 0.5
    assert np.percentile(difference, 99.5) < 40  # resampling softens an edge, nothing more


def test_an_expression_change_fades_the_head_into_its_new_colours(qapp):
    frames = _changing("angry", "neutral", 5)
    cached, _ = _cached(frames)
    direct = _paint(frames[-1], None)
    assert np.abs(cached - direct).mean() < 1.0
    # ...and the fade is really there: halfway, the head is neither angry nor calm yet.
    angry = _paint(frames[0], None)
    calm = _paint(replace(frames[-1], shape=shape_for("neutral"), settling=None), None)
    x, y = SIDE // 2 - 45, SIDE // 2 + 8  # her cheek
    cheek = np.s_[y, x * 4: x * 4 + 3]
    assert np.abs(cached[cheek] - angry[cheek]).sum() > 6
    assert np.abs(cached[cheek] - calm[cheek]).sum() > 6


def _count_calls(monkeypatch, name: str) -> list[int]:
    calls = [0]
    original = getattr(face_layers, name)

    def counted(*args):
        calls[0] += 1
        return original(*args)

    monkeypatch.setattr(face_layers, name, counted)
    monkeypatch.setitem(face_layers._PAINTERS, name.removeprefix("paint_"), counted)
    return calls


def test_while_she_speaks_only_her_mouth_is_drawn_again(qapp, monkeypatch):
    frames = _held(FaceFrame(shape=shape_for("happy"), state="speaking", speech_level=0.6), 10)
    cache = LayerCache()
    for frame in frames[:4]:
        _paint(frame, cache)
    base, features, mouth = (_count_calls(monkeypatch, name) for name in ("paint_base", "paint_features", "paint_mouth"))
    renders = cache.renders
    for k, frame in enumerate(frames[4:]):
        _paint(replace(frame, speech_level=0.2 + 0.1 * k), cache)
    assert (base[0], features[0], cache.renders - renders) == (0, 0, 0)
    assert mouth[0] == len(frames) - 4


def test_during_an_expression_change_the_head_is_not_drawn_again(qapp, monkeypatch):
    cache = LayerCache()
    for frame in _changing("neutral", "angry", 2):  # the old head, then the new one made
        _paint(frame, cache)
    base = _count_calls(monkeypatch, "paint_base")
    for frame in _changing("neutral", "angry", 9)[-6:]:
        _paint(frame, cache)
    assert base[0] == 0


def test_a_layer_is_cut_to_the_bands_where_it_has_pixels(qapp):
    image = QImage(100, 100, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor(0, 0, 0, 0))
    painter = QPainter(image)
    painter.fillRect(10, 5, 30, 10, QColor("red"))  # a fringe...
    painter.fillRect(50, 80, 20, 6, QColor("blue"))  # ...and, far below it, a bow tie
    painter.end()
    pieces = crop_to_bands(image, 50.0)
    assert [(p.x, p.y, p.image.width(), p.image.height()) for p in pieces] == [
        (-40.0, -45.0, 30, 10), (0.0, 30.0, 20, 6)]
    empty = QImage(20, 20, QImage.Format.Format_ARGB32_Premultiplied)
    empty.fill(QColor(0, 0, 0, 0))
    assert crop_to_bands(empty, 10.0) == ()
