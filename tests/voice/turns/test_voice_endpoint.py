"""The endpointer, fed (seconds, speech?) spans with no audio device and no model."""

from __future__ import annotations

import numpy as np

from companion.voice.sound.frames import FRAME_S, FRAME_SAMPLES
from companion.voice.turns.endpoint import (
    CUT_WINDOW_S,
    Endpointer,
    EndpointSettings,
    PauseStarted,
    SpeechResumed,
    SpeechStarted,
    TurnCheck,
    UtteranceEnded,
)


def feed(spans: list[tuple[float, bool]], settings: EndpointSettings | None = None):
    endpointer = Endpointer(settings or EndpointSettings())
    events = []
    index = 0
    for seconds, speech in spans:
        for _ in range(round(seconds / FRAME_S)):
            # Each frame carries its own index so the test can see which audio an utterance holds.
            frame = np.full(FRAME_SAMPLES, index, dtype=np.float32)
            events += endpointer.push(frame, 0.9 if speech else 0.05)
            index += 1
    return events


def of(kind, events):
    return [e for e in events if isinstance(e, kind)]


def test_an_utterance_keeps_the_audio_from_before_the_onset():
    events = feed([(1.0, False), (0.8, True), (0.8, False)])
    [ended] = of(UtteranceEnded, events)
    onset_frame = round(1.0 / FRAME_S)
    first = int(ended.audio[0])
    assert onset_frame - first >= round(0.3 / FRAME_S)


def test_a_click_shorter_than_the_minimum_speech_is_ignored():
    events = feed([(0.5, False), (0.064, True), (1.0, False)])
    assert events == []


def test_a_short_pause_inside_speech_keeps_one_utterance_and_discards_the_early_pause():
    events = feed([(0.3, False), (0.8, True), (0.25, False), (0.8, True), (0.8, False)])
    assert len(of(UtteranceEnded, events)) == 1
    [first_pause, last_pause] = of(PauseStarted, events)
    assert of(SpeechResumed, events) == [SpeechResumed(first_pause.pause_id)]
    assert of(UtteranceEnded, events)[0].pause_id == last_pause.pause_id


def test_a_long_silence_separates_two_utterances():
    events = feed([(0.3, False), (0.8, True), (1.0, False), (0.8, True), (1.0, False)])
    assert len(of(SpeechStarted, events)) == 2
    assert len(of(UtteranceEnded, events)) == 2


def test_the_pause_that_ends_an_utterance_carries_the_same_audio_as_the_utterance():
    events = feed([(0.3, False), (1.0, True), (1.0, False)])
    [pause] = of(PauseStarted, events)
    [ended] = of(UtteranceEnded, events)
    assert ended.pause_id == pause.pause_id
    assert np.array_equal(ended.audio, pause.audio)


def test_an_utterance_is_capped_at_thirty_seconds():
    events = feed([(0.3, False), (31.0, True), (0.8, False)])
    ended = of(UtteranceEnded, events)
    assert ended[0].pause_id is None
    assert len(ended[0].audio) <= round(30.0 / FRAME_S) * FRAME_SAMPLES


def test_someone_reading_on_is_cut_near_the_limit_at_a_gap_between_words_not_inside_one():
    # 0.9 s of words and 0.1 s between them, for 40 s: never a pause long enough for a turn.
    spans = [(0.3, False)] + [(0.9, True), (0.1, False)] * 40
    events = feed(spans)
    first = of(UtteranceEnded, events)[0]
    seconds = len(first.audio) / FRAME_SAMPLES * FRAME_S
    assert 30.0 - CUT_WINDOW_S <= seconds < 30.0, seconds
    last_frame = int(first.audio[-1])
    assert _is_gap(last_frame, spans), last_frame  # it ends between words
    assert len(of(SpeechStarted, events)) >= 2  # the next words begin the next utterance whole


def _is_gap(frame_index: int, spans: list[tuple[float, bool]]) -> bool:
    at = 0
    for seconds, speech in spans:
        frames = round(seconds / FRAME_S)
        if frame_index < at + frames:
            return not speech
        at += frames
    return False


def test_the_end_of_turn_silence_setting_decides_what_counts_as_the_end():
    spans = [(0.3, False), (0.8, True), (0.6, False), (0.8, True), (1.5, False)]
    assert len(of(UtteranceEnded, feed(spans, EndpointSettings(end_silence_ms=500)))) == 2
    assert len(of(UtteranceEnded, feed(spans, EndpointSettings(end_silence_ms=900)))) == 1


def semantic(patience_ms: int = 2000) -> EndpointSettings:
    return EndpointSettings.for_patience(patience_ms, turn_model=True)


def test_a_pause_asks_the_turn_model_at_100_ms_and_every_100_ms_while_it_says_wait():
    events = feed([(0.3, False), (0.8, True), (2.5, False)], semantic())
    checks = of(TurnCheck, events)
    assert [round(c.silence_ms) for c in checks] == list(range(96, 2000, 96))
    # The model hears the silence too: each check carries the audio up to that moment.
    assert checks[1].audio.size > checks[0].audio.size
    # Nobody answered "finished": the patience (2 s) ended the turn.
    [ended] = of(UtteranceEnded, events)
    assert ended.pause_id == checks[0].pause_id


def test_the_turn_ends_the_moment_the_model_says_finished():
    endpointer = Endpointer(semantic())
    frames = [(np.zeros(FRAME_SAMPLES, np.float32), p) for p in [0.05] * 10 + [0.9] * 25 + [0.05] * 60]
    ended, checked_at = [], None
    for index, (frame, probability) in enumerate(frames):
        for event in endpointer.push(frame, probability):
            if isinstance(event, TurnCheck) and checked_at is None:
                checked_at = index
                ended += endpointer.conclude(event.pause_id)
    assert len(ended) == 1 and isinstance(ended[0], UtteranceEnded)
    assert (checked_at - 35) * FRAME_S < 0.15  # 100 ms after the speech, not 2 s
    assert not endpointer.in_speech


def test_an_answer_about_a_pause_the_speaker_has_talked_through_changes_nothing():
    endpointer = Endpointer(semantic())
    events = []
    for probability in [0.05] * 10 + [0.9] * 25 + [0.05] * 4 + [0.9] * 10:
        events += endpointer.push(np.zeros(FRAME_SAMPLES, np.float32), probability)
    [check] = of(TurnCheck, events)
    assert of(SpeechResumed, events)
    assert endpointer.conclude(check.pause_id) == []
    assert endpointer.in_speech


def test_without_a_turn_model_a_fixed_silence_no_longer_than_the_patience_ends_the_turn():
    assert EndpointSettings.for_patience(2000, turn_model=False).end_silence_ms == 500
    assert EndpointSettings.for_patience(300, turn_model=False).end_silence_ms == 300
    events = feed([(0.3, False), (0.8, True), (0.6, False)], EndpointSettings.for_patience(2000, turn_model=False))
    assert of(TurnCheck, events) == [] and len(of(UtteranceEnded, events)) == 1


def test_audio_that_runs_out_mid_utterance_ends_it():
    endpointer = Endpointer(semantic())
    for probability in [0.05] * 10 + [0.9] * 25 + [0.05] * 3:
        endpointer.push(np.zeros(FRAME_SAMPLES, np.float32), probability)
    [ended] = endpointer.flush()
    assert isinstance(ended, UtteranceEnded) and not endpointer.in_speech
