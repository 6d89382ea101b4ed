"""Her face: 14 distinct expressions, quick eased changes, lip sync, blinking, the PNG command."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QImage, QPainter
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion import cli
from companion.events import EXPRESSIONS
from companion.ui.face.animation import FaceAnimator
from companion.ui.face.expressions import SHAPES, WINDOW_EXPRESSIONS, shape_for
from companion.ui.face.head import below_line
from companion.ui.face.painter import paint_face
from companion.ui.face.widget import FaceWidget, render_expression


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _pixels(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    data = np.frombuffer(image.constBits(), dtype=np.uint8)
    return data.reshape(image.height(), image.bytesPerLine())[:, : image.width() * 4].astype(int)


@pytest.fixture(scope="module")
def rendered(qapp):
    return {name: _pixels(render_expression(name, 160, 160)) for name in EXPRESSIONS}


def test_every_expression_the_core_names_has_its_own_shape():
    assert set(SHAPES) == set(EXPRESSIONS) | set(WINDOW_EXPRESSIONS)
    assert len({shape_for(name) for name in SHAPES}) == 14 + len(WINDOW_EXPRESSIONS)


def test_all_fourteen_rendered_expressions_differ_from_each_other(rendered):
    for a, b in itertools.combinations(EXPRESSIONS, 2):
        changed = (np.abs(rendered[a] - rendered[b]) > 24).reshape(160, 160, 4).any(axis=-1)
        # At a glance means a real share of the face changes, not a few edge pixels.
        assert changed.mean() > 0.01, f"{a} and {b} look alike ({changed.mean():.4f} of pixels differ)"


def test_an_unknown_expression_falls_back_to_neutral():
    assert shape_for("smug") == SHAPES["neutral"]


def test_an_expression_change_finishes_within_250_ms_of_animation_time():
    animator = FaceAnimator(100.0, rng=random.Random(1))
    animator.set_expression("surprised", 100.0)
    midway = animator.shape(100.1)
    assert midway != SHAPES["neutral"] and midway != SHAPES["surprised"]
    assert animator.in_transition(100.1)
    assert animator.shape(100.25) == SHAPES["surprised"]
    assert not animator.in_transition(100.25)


def test_a_change_during_a_change_starts_from_where_the_face_is():
    animator = FaceAnimator(0.0)
    animator.set_expression("happy", 0.0)
    halfway = animator.shape(0.11)
    animator.set_expression("sad", 0.11)
    assert animator.shape(0.11) == halfway  # no jump
    assert animator.shape(0.11 + 0.25) == SHAPES["sad"]


def test_lip_sync_follows_the_injected_output_level():
    animator = FaceAnimator(0.0)
    animator.set_state("speaking")
    animator.set_speech_level(0.9)
    levels = [animator.frame(i * 0.016).speech_level for i in range(1, 8)]
    assert levels[-1] > 0.8 and levels == sorted(levels)
    animator.set_speech_level(0.0)
    closing = [animator.frame(0.112 + i * 0.016).speech_level for i in range(1, 30)]
    assert closing[-1] < 0.05
    animator.set_speech_level(0.7)
    animator.set_state("idle")  # she stopped speaking: the mouth closes whatever the level
    assert [animator.frame(1.0 + i * 0.016).speech_level for i in range(40)][-1] < 0.05


def test_she_blinks_at_irregular_intervals():
    animator = FaceAnimator(0.0, rng=random.Random(7))
    onsets, was_closed = [], False
    for i in range(int(40 / 0.008)):
        now = i * 0.008
        closed = animator.frame(now).blink > 0.5
        if closed and not was_closed:
            onsets.append(now)
        was_closed = closed
    gaps = np.diff(onsets)
    assert 6 <= len(onsets) <= 30
    assert gaps.max() - gaps.min() > 1.0


def test_the_face_widget_paints_frames_on_its_timer(qtbot):
    widget = FaceWidget()
    qtbot.addWidget(widget)
    widget.resize(200, 200)
    widget.show()
    qtbot.waitUntil(lambda: widget.last_frame is not None, timeout=2000)
    first = widget.last_frame
    qtbot.waitUntil(lambda: widget.last_frame is not first, timeout=2000)
    widget.set_expression("angry")
    assert widget.expression == "angry"


def test_lip_sync_updates_do_not_restart_the_frame_timer(qtbot):
    # A restarted timer stretches every frame by the time between restarts (frames arrived
    # every ~22 ms instead of 16 while she spoke).
    widget = FaceWidget()
    qtbot.addWidget(widget)
    widget.show()
    widget.set_speech_level(0.5)
    timer = widget._timer
    # (Switching from the idle rate to the full rate does restart it, on purpose.)
    qtbot.waitUntil(lambda: timer.interval() == 16 and 0 <= timer.remainingTime() < 10, timeout=2000)
    before = timer.remainingTime()
    widget.set_speech_level(0.6)
    widget.set_state("speaking")
    assert timer.remainingTime() <= before


def test_the_face_command_writes_a_png_of_the_requested_size(tmp_path, qapp):
    out = tmp_path / "pics" / "sad.png"
    code = cli.main(["face", "--config-dir", str(tmp_path), "--expression", "sad",
                     "--out", str(out), "--size", "320x200"])
    assert code == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (320, 200)


def test_the_face_command_refuses_an_unknown_expression(tmp_path, capsys):
    code = cli.main(["face", "--config-dir", str(tmp_path), "--expression", "smug",
                     "--out", str(tmp_path / "x.png")])
    assert code == 2
    assert "unknown expression 'smug'" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_the_frame_rate_follows_what_moves_full_for_changes_slow_for_the_idle_sway():
    animator = FaceAnimator(0.0, rng=random.Random(3))
    quiet = next(t / 100 for t in range(100, 1000) if animator.frame_interval_ms(t / 100) >= 125)
    animator.set_expression("happy", quiet)  # only the sway was left: 8 fps or fewer
    assert animator.frame_interval_ms(quiet + 0.1) == 16  # a change is under way
    animator.set_state("listening")
    later = next(t / 100 for t in range(int(quiet * 100) + 30, 3000) if animator.frame_interval_ms(t / 100) == 50)
    animator.set_listen_level(0.6)  # the listening ring breathed at 20 fps; now it swells
    animator.frame(later)
    animator.frame(later + 0.2)
    assert animator.frame_interval_ms(later + 0.2) == 33
    animator.set_state("speaking")
    assert animator.frame_interval_ms(later + 0.2) == 16  # lip sync


def test_the_idle_sway_is_painted_as_often_as_it_moves_never_a_larger_step_than_at_its_fastest():
    from companion.ui.face.animation import STILL_MS

    animator = FaceAnimator(0.0, rng=random.Random(7))
    animator._blink_at = 1e9  # blinks aside: they have their own pace

    def edge(t: float) -> tuple[float, float]:  # where a point on the head's edge is
        frame = animator.frame(t)
        return math.radians(frame.sway), frame.bob

    t, times = 1.0, []
    while t < 31.0:
        times.append(t)
        t += animator.frame_interval_ms(t) / 1000
    fastest = max(math.dist(edge(a), edge(a + STILL_MS / 1000)) for a in np.arange(1.0, 31.0, 0.01))
    steps = [math.dist(edge(a), edge(b)) for a, b in itertools.pairwise(times)]
    assert max(steps) <= fastest * 1.05
    assert len(times) < 30 * 1000 / STILL_MS * 0.75  # at 8 fps throughout it would be 240 frames


def test_while_she_listens_to_quiet_a_frame_is_painted_when_the_ring_breathes_a_step_and_none_is_skipped():
    from companion.ui.face.animation import BREATHING_MS
    from companion.ui.face.extras import RING_STEPS, breath_step

    animator = FaceAnimator(0.0, rng=random.Random(9))
    animator._blink_at = 1e9
    animator.set_state("listening")
    t, times = 1.0, []
    while t < 21.0:
        times.append(t)
        t += animator.frame_interval_ms(t) / 1000
    breaths = [breath_step(t) for t in times]
    assert max(abs(b - a) for a, b in itertools.pairwise(breaths)) <= 1 / RING_STEPS + 1e-9
    assert len(times) < 20 * 1000 / BREATHING_MS * 0.7  # at 20 fps throughout it would be 400 frames


def test_a_blink_is_never_skipped_by_a_slow_frame():
    animator = FaceAnimator(0.0, rng=random.Random(5))
    t, blinks = 0.0, 0
    while t < 30.0:
        frame = animator.frame(t)
        blinks += frame.blink > 0.5
        t += animator.frame_interval_ms(t) / 1000
    assert blinks >= 5  # 2-6 s apart over 30 s, each seen shut or nearly


def test_the_widget_goes_back_to_full_rate_when_her_face_changes(qtbot):
    from companion.ui.face.widget import FRAME_INTERVAL_MS, IDLE_FRAME_INTERVAL_MS

    widget = FaceWidget()
    qtbot.addWidget(widget)
    widget.resize(200, 200)
    widget.show()
    qtbot.waitUntil(lambda: widget._timer.interval() >= IDLE_FRAME_INTERVAL_MS, timeout=5000)
    widget.set_expression("surprised")
    assert widget._timer.interval() == FRAME_INTERVAL_MS


def test_a_lid_keeps_exactly_the_part_of_the_eye_below_its_line():
    eye = QRectF(-1.0, -2.0, 2.0, 4.0)  # centre 0, 0; rx 1, ry 2
    assert below_line(eye, -3.0, 0.0).contains(QPointF(0, -1.9))  # a lid above: the whole eye
    assert below_line(eye, 2.5, 0.0).isEmpty()  # shut
    half = below_line(eye, 0.0, 0.0)
    assert half.contains(QPointF(0, 1.0)) and not half.contains(QPointF(0, -1.0))
    slanted = below_line(eye, 0.0, 1.0)  # y = x: the inner corner open, the outer shut
    for x, y in [(-0.5, 0.0), (0.3, 0.6), (-0.9, -0.5), (0.5, 0.3), (0.2, -0.5), (0.0, 1.9)]:
        inside_eye = x * x + y * y / 4 < 1.0
        assert slanted.contains(QPointF(x, y)) == (inside_eye and y > x), (x, y)


def test_while_she_speaks_frames_are_drawn_ahead_and_shown_as_drawing_them_then_would_show_them(qtbot):
    widget = FaceWidget()
    qtbot.addWidget(widget)
    widget.resize(240, 220)
    widget.show()
    widget.set_state("speaking")
    widget.set_speech_level(0.7)
    qtbot.waitUntil(lambda: widget.frames_ahead >= 5, timeout=3000)
    assert widget.frames_ahead >= widget.frames - 3  # nearly every tick only copied its frame

    for _ in range(20):  # a grab between a tick and the next draw paints directly: try again
        before = widget.frames_ahead
        shown = widget.grab().toImage().convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
        if widget.frames_ahead == before + 1:
            break
        qtbot.wait(5)
    assert widget.frames_ahead == before + 1
    direct = QImage(shown.size(), QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(direct)
    # Drawn now, with the same layer images the widget keeps: the copy must match it.
    paint_face(painter, QRectF(widget.rect()), widget.last_frame,
               layer_cache=widget._layer_cache, ring_cache=widget._ring_cache)
    painter.end()
    a, b = (np.frombuffer(image.constBits(), np.uint8).astype(int) for image in (shown, direct))
    assert np.abs(a - b).max() == 0
