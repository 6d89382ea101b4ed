"""While she holds for open words ("Could you…") her face shows she is listening: an attentive
look and a small nod, from the core's HoldingChanged through the bridge, gone when the hold ends."""

from __future__ import annotations

import pytest
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion.events import HoldingChanged, State, StateChanged
from companion.ui.face.animation import FaceAnimator
from companion.ui.face.holding import NOD_S


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _bob_range(animator: FaceAnimator, start: float, seconds: float) -> float:
    bobs = [animator.frame(start + i / 60).bob for i in range(int(seconds * 60))]
    return max(bobs) - min(bobs)


def test_a_hold_for_open_words_turns_her_attentive_and_nodding_and_the_look_goes_when_it_ends():
    animator = FaceAnimator(0.0)
    animator.set_state("listening")
    plain = animator.frame(1.0)
    breathing = _bob_range(animator, 1.0, NOD_S)
    animator.set_holding(True)
    held = animator.frame(3.0)  # 0.7 s into the hold
    assert held.shape.eye_height > plain.shape.eye_height
    assert held.shape.head_tilt >= plain.shape.head_tilt + 4
    assert _bob_range(animator, 3.0, NOD_S) > 2 * breathing  # a nod, not the breath alone
    animator.set_holding(False)
    after = animator.frame(6.0)
    assert after.shape.head_tilt == pytest.approx(plain.shape.head_tilt, abs=0.01)
    assert after.shape.eye_height == pytest.approx(plain.shape.eye_height, abs=0.001)
    assert _bob_range(animator, 6.0, NOD_S) < 1.2 * breathing


def test_her_windows_face_follows_the_cores_hold_through_the_bridge_and_returns_after(qtbot, bus_to_face):
    bus, face = bus_to_face
    plain_tilt = face.last_frame.shape.head_tilt

    bus.emit(HoldingChanged(True))
    qtbot.waitUntil(lambda: face.last_frame.shape.head_tilt > plain_tilt + 4, timeout=3000)
    bus.emit(HoldingChanged(False))
    qtbot.waitUntil(lambda: abs(face.last_frame.shape.head_tilt - plain_tilt) < 0.05, timeout=3000)

    bus.emit(HoldingChanged(True))
    qtbot.waitUntil(lambda: face.last_frame.shape.head_tilt > plain_tilt + 4, timeout=3000)
    bus.emit(StateChanged(State.THINKING))  # her turn began: the hold is over whatever said so
    qtbot.waitUntil(lambda: not face.animator.holding, timeout=3000)  # (her thinking look has a tilt of its own)
