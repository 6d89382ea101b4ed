"""When the user talks over her: sustained speech, loud enough as a whole (frames measured
behind the echo canceller in the 0 dB open-speaker bench)."""

from __future__ import annotations

from companion.voice.ear import talks_over_her

FLOOR = 0.0158
"""The floor while she plays at her usual level behind an echo canceller."""
NEEDED = 6
"""200 ms of 32 ms frames."""


def test_a_word_with_one_quiet_frame_in_its_middle_is_the_user_talking_over_her():
    please = [(True, 0.135), (True, 0.063), (True, 0.092), (True, 0.018), (True, 0.008), (True, 0.226)]
    assert talks_over_her(please, NEEDED, FLOOR)


def test_her_own_echo_left_by_the_canceller_never_stops_her_even_where_it_sounds_like_speech():
    residue = [(True, 0.002), (True, 0.004), (True, 0.001), (True, 0.003), (True, 0.002), (True, 0.005)]
    assert not talks_over_her(residue, NEEDED, FLOOR)


def test_one_loud_knock_among_quiet_frames_does_not_stop_her():
    knock = [(True, 0.002), (True, 0.004), (True, 0.3), (True, 0.003), (True, 0.002), (True, 0.005)]
    assert not talks_over_her(knock, NEEDED, FLOOR)


def test_a_loud_sound_that_does_not_sound_like_speech_does_not_stop_her():
    clatter = [(False, 0.2)] * 12 + [(True, 0.2)] * (NEEDED - 1)
    assert not talks_over_her(clatter, NEEDED, FLOOR)
