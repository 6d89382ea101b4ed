"""The see-through compact face's outline: every pixel she paints in her current look, however
it moves (the Zz drifting up while she dozes, Pip's horns swaying, the mouth wide open), is
inside her window's shape, soft edges included, and the shape follows a change of look."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from app_support import app_config
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.ui.face.animation import BOB, SWAY_DEG
from companion.ui.face.painter import paint_face


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _alpha(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_ARGB32)
    pixels = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)
    return pixels[:, :image.width(), 3]


def painted_outside(compact, frame) -> int:
    """How many pixels `frame` paints that the window's shape leaves out."""
    face = compact.face
    painted = QImage(face.size(), QImage.Format.Format_ARGB32_Premultiplied)
    painted.fill(QColor(0, 0, 0, 0))
    painter = QPainter(painted)
    paint_face(painter, QRectF(face.rect()), frame, background=False)
    painter.end()
    shape = QImage(face.size(), QImage.Format.Format_ARGB32_Premultiplied)
    shape.fill(QColor(0, 0, 0, 0))
    painter = QPainter(shape)
    painter.setClipRegion(compact.mask().translated(-face.pos()))
    painter.fillRect(shape.rect(), QColor("black"))
    painter.end()
    return int(np.count_nonzero((_alpha(painted) > 0) & (_alpha(shape) == 0)))


@pytest.mark.parametrize(("character", "expression", "state"), [
    ("mira", "sleepy", "idle"), ("pip", "happy", "speaking"), ("mira", "thinking", "listening")])
def test_every_pixel_she_paints_in_her_look_is_inside_her_window_s_shape(
        make_app, tmp_path, scripted_brain, qtbot, character, expression, state):
    app = make_app(app_config(tmp_path, scripted_brain.url))
    app.desktop.set_compact(True)
    compact = app.desktop.compact
    qtbot.waitExposed(compact)
    face = app.window.face
    face.set_character(character)
    face.set_expression(expression)
    face.set_state(state)
    # The shape follows the new look by itself, once her face has painted it.
    qtbot.waitUntil(lambda: compact.face.look()[:2] == (state, character)
                    and compact.face.look()[2] == compact.face.last_frame.shape, timeout=15000)
    qtbot.waitUntil(lambda: compact._masked_look == compact.face.look(), timeout=15000)

    settled = compact.face.last_frame
    moments = [replace(settled, phase=t / 10, sway=sway, bob=bob, speech_level=level, listen_level=level, blink=0.0)
               for t in range(0, 40, 3) for sway, bob, level in ((SWAY_DEG, BOB, 1.0), (-SWAY_DEG, -BOB, 0.0))]
    left_out = {i: count for i, frame in enumerate(moments) if (count := painted_outside(compact, frame))}
    assert left_out == {}
    compact.deleteLater()
