"""When words go unanswered because of whose voice said them (events.VoiceIgnored: another voice
in the follow-up window, a stranger's "yes, run it" or "stop", anyone but the user in Only me),
her face gives a brief "not you" look: narrowed eyes and a small shake of the head, from the
core's event through the bridge, gone after about a second."""

from __future__ import annotations

import pytest
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion.events import VoiceIgnored
from companion.ui.face.animation import FaceAnimator
from companion.ui.face.not_you import NOT_YOU_S, SHAKE_DEG
from companion.voice.whose_words import VOICE_REASONS


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _tilts(animator: FaceAnimator, start: float, seconds: float) -> list[float]:
    return [animator.frame(start + i / 60).shape.head_tilt for i in range(int(seconds * 60))]


def test_a_voice_ignored_gives_a_brief_narrow_eyed_head_shake_and_then_her_face_is_as_before():
    animator = FaceAnimator(0.0)
    animator.set_state("listening")
    plain = animator.frame(1.0)
    animator.not_you(2.0)
    look = animator.frame(2.3)
    assert look.shape.eye_height < 0.9 * plain.shape.eye_height and look.shape.mouth_curve < plain.shape.mouth_curve
    tilts = _tilts(animator, 2.0, NOT_YOU_S)
    assert max(tilts) > plain.shape.head_tilt + SHAKE_DEG / 2 and min(tilts) < plain.shape.head_tilt - SHAKE_DEG / 2
    assert animator.frame_interval_ms(2.5) == 16  # a shake is quick motion: drawn at full rate
    after = animator.frame(2.0 + NOT_YOU_S + 0.01)
    assert after.shape == plain.shape


def test_her_windows_face_shows_each_voice_decisions_reason_from_the_core_through_the_bridge(qtbot, bus_to_face):
    bus, face = bus_to_face
    plain_eyes = face.last_frame.shape.eye_height

    for reason, sentence in VOICE_REASONS.items():
        bus.emit(VoiceIgnored(reason, sentence))
        qtbot.waitUntil(lambda: face.last_frame.shape.eye_height < 0.9 * plain_eyes, timeout=3000)
        qtbot.waitUntil(lambda: face.last_frame.shape.eye_height == pytest.approx(plain_eyes), timeout=3000)
