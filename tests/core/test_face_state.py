"""The one state of her face and pill, derived from what the core says is going on."""

from __future__ import annotations

from companion.events import (
    EventBus,
    SpeakingChanged,
    State,
    StateChanged,
    TurnFinished,
    TurnSource,
    TurnStarted,
)
from companion.face_state import FaceState


def states_through(*events) -> list[State]:
    bus = EventBus()
    face = FaceState(bus)
    seen: list[State] = []
    bus.subscribe(lambda e: seen.append(e.state) if isinstance(e, StateChanged) else None)
    for event in events:
        bus.emit(event)
    face.close()
    return seen


def test_a_job_s_result_she_tells_goes_straight_to_speaking_with_no_thinking_before_it():
    seen = states_through(
        TurnStarted(3, TurnSource.NOTICE, "My background job is done."),
        SpeakingChanged(False, 3, queued=True),  # synthesizing her line
        SpeakingChanged(True, 3, queued=True),
        SpeakingChanged(False, 3, queued=False),
        TurnFinished("My background job is done.", "neutral", turn=3),
    )
    assert seen == [State.SPEAKING, State.IDLE]


def test_a_question_s_answer_on_its_way_is_still_thinking_until_her_voice_plays():
    seen = states_through(
        TurnStarted(4, TurnSource.SPOKEN, "What time is it?"),
        SpeakingChanged(False, 4, queued=True),  # her reply's first sentence being synthesized
        TurnFinished("It is noon.", "neutral", turn=4),
        SpeakingChanged(True, 4, queued=True),
        SpeakingChanged(False, 4, queued=False),
    )
    assert seen == [State.THINKING, State.SPEAKING, State.IDLE]
