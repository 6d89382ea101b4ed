"""What the ear remembers so that words going on after a pause are heard with the turn before."""

from __future__ import annotations

import numpy as np

from companion.voice.sound.frames import SAMPLE_RATE
from companion.voice.turns.going_on import GOES_ON_S, GoingOn


def seconds(s: float, value: float = 0.1) -> np.ndarray:
    return np.full(round(s * SAMPLE_RATE), value, dtype=np.float32)


def test_speech_starting_right_after_a_heard_utterance_is_joined_to_it_from_its_first_word():
    going_on = GoingOn(max_utterance_s=30.0)
    first, second = seconds(1.0, 0.1), seconds(0.5, 0.2)
    going_on.remember(first, start_s=2.0, end_s=3.0)
    audio, start_s = going_on.joined(second, start_s=3.0 + GOES_ON_S / 2)
    assert start_s == 2.0
    assert np.array_equal(audio, np.concatenate([first, second]))


def test_speech_after_a_longer_silence_or_from_before_it_stands_alone():
    going_on = GoingOn(max_utterance_s=30.0)
    going_on.remember(seconds(1.0), start_s=2.0, end_s=3.0)
    assert going_on.joined(seconds(0.5), start_s=3.0 + GOES_ON_S + 0.1) is None
    assert going_on.joined(seconds(0.5), start_s=2.5) is None  # began before the other ended: another clock


def test_a_chain_of_short_pauses_never_joins_past_the_longest_utterance_the_endpointer_allows():
    going_on = GoingOn(max_utterance_s=10.0)
    going_on.remember(seconds(4.0), start_s=0.0, end_s=4.0)
    audio, start_s = going_on.joined(seconds(4.0), start_s=4.5)  # 8 s heard as one
    going_on.remember(audio, start_s, end_s=8.5)
    assert going_on.joined(seconds(4.0), start_s=9.0) is None  # 12 s would be longer than one may be
    assert going_on.joined(seconds(2.0), start_s=9.0)[0].size == 10.0 * SAMPLE_RATE


def test_nothing_goes_on_after_the_clock_started_again():
    going_on = GoingOn(max_utterance_s=30.0)
    going_on.remember(seconds(1.0), start_s=2.0, end_s=3.0)
    going_on.forget()
    assert going_on.joined(seconds(0.5), start_s=3.2) is None
