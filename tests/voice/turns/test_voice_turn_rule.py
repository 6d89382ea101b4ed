"""The end-of-turn rule on its own: the words and the turn model's probability together."""

from __future__ import annotations

import pytest

from companion.voice.turns.turn_rule import TurnRule, Words, read_words, sounds_unfinished

RULE = TurnRule(threshold=0.7, finished_threshold=0.5, finished_by_ms=1000, first_check_ms=100)


def test_words_that_stop_on_to_the_or_um_make_her_wait_however_finished_it_sounds():
    for words in ("I would like to", "Remind me about the", "Play something, um", "Can you check whether"):
        assert read_words(words) is Words.OPEN, words
        assert not RULE.decide(1.0, read_words(words), 999)


def test_an_imperative_that_has_said_whom_but_not_what_sounds_unfinished():
    for words in ("Tell me", "Show me.", "Give us", "I was wondering"):
        assert sounds_unfinished(words), words
    for words in ("Please remind me.", "Thank you", "Call me."):
        assert not sounds_unfinished(words), words


def test_after_finished_words_the_bar_for_the_sound_falls_with_the_silence_to_nothing():
    finished = read_words("Why is the sky blue?")
    assert finished is Words.FINISHED
    assert RULE.bar(finished, 100) == pytest.approx(0.5)
    assert RULE.bar(finished, 550) == pytest.approx(0.25)
    assert not RULE.decide(0.4, finished, 100)
    assert RULE.decide(0.4, finished, 550)
    assert RULE.decide(0.0, finished, 1000)


def test_with_no_punctuation_to_go_on_the_sound_alone_decides_at_its_threshold():
    unclear = read_words("set an alarm for seven thirty")
    assert unclear is Words.UNCLEAR
    assert not RULE.decide(0.69, unclear, 1900)
    assert RULE.decide(0.7, unclear, 100)


def test_a_bar_that_would_fall_before_the_first_check_is_refused():
    with pytest.raises(ValueError):
        TurnRule(finished_by_ms=50, first_check_ms=100)


def test_a_complete_question_by_the_words_model_ends_the_turn_at_once_whatever_the_sound_says():
    rule = TurnRule(threshold=0.7, finished_threshold=0.9, text_sure=0.3, text_open=0.2, text_open_until_ms=1536)
    assert rule.decide(0.0, Words.FINISHED, 96, text=0.34)
    assert not rule.decide(0.0, Words.FINISHED, 96)  # without the model the sound must clear 0.9


def test_an_open_sentence_by_the_words_model_holds_her_until_its_hold_ends_whatever_the_sound_says():
    rule = TurnRule(threshold=0.7, finished_threshold=0.2, finished_by_ms=768, text_sure=0.3, text_open=0.2,
                    text_open_until_ms=1536, text_unsure_bar=0.2, text_unsure_by_ms=768)
    assert rule.bar(Words.FINISHED, 1000, text=0.001) is None
    assert not rule.decide(1.0, Words.FINISHED, 1500, text=0.001)
    assert rule.decide(0.0, Words.FINISHED, 1536, text=0.001)  # the hold is over: the words' rule again
    assert rule.decide(1.0, Words.FINISHED, 1000)  # without the model the sound ends it


def test_open_words_wait_even_when_the_words_model_is_sure():
    rule = TurnRule(text_sure=0.3)
    assert not rule.decide(1.0, Words.OPEN, 1900, text=0.99)


def test_the_words_models_thresholds_are_checked():
    with pytest.raises(ValueError):
        TurnRule(text_open=1.5)


def test_she_holds_for_open_words_or_an_open_verdict_of_the_words_model_and_not_for_finished_ones():
    rule = TurnRule(text_sure=0.5, text_open=0.2, text_open_until_ms=1536)
    assert rule.holds(read_words("Could you read me the"), 300)
    assert rule.holds(Words.UNCLEAR, 300, text=0.01)  # "Thomas Piketty, in his book" by the model
    assert not rule.holds(Words.UNCLEAR, 1600, text=0.01)  # the model's hold has ended
    assert not rule.holds(read_words("What time is it?"), 300, text=0.9)
    assert not rule.holds(Words.UNCLEAR, 300)  # no words' model: the sound decides, nothing holds her


UNSURE = TurnRule(finished_threshold=0.2, finished_by_ms=768, text_sure=0.6, text_open=0.3, text_open_until_ms=1536,
                  text_unsure_bar=0.5, text_unsure_by_ms=2000)


def test_after_finished_words_the_words_model_is_unsure_of_a_doubtful_sound_waits_past_the_words_own_bar():
    # "He was not an old-sposed young man." | "unless to be…": Smart Turn 0.14 at 576 ms, the model unsure.
    finished = read_words("He was not an old-sposed young man.")
    assert UNSURE.decide(0.14, finished, 576)  # by the words alone the bar has nearly fallen (0.057)
    assert not UNSURE.decide(0.14, finished, 576, text=0.46)
    assert not UNSURE.decide(0.01, finished, 1632, text=0.46)  # still above 0 at 1.6 s of silence
    assert UNSURE.decide(0.0, finished, 2000, text=0.46)
    assert UNSURE.decide(0.6, finished, 96, text=0.46)  # a finished-sounding end is taken at once


def test_the_unsure_bar_leaves_the_words_line_without_the_model_and_the_models_two_verdicts_alone():
    finished = read_words("Okay.")
    assert UNSURE.bar(finished, 96) == pytest.approx(0.2)  # no words' model: the words' own line
    assert UNSURE.bar(finished, 96, text=0.45) == pytest.approx(0.5)
    assert UNSURE.bar(finished, 96, text=0.6) == 0.0  # sure
    assert UNSURE.bar(finished, 96, text=0.1) is None  # open
    assert UNSURE.bar(Words.UNCLEAR, 96, text=0.45) == pytest.approx(UNSURE.threshold)


def test_an_unsure_bar_that_would_fall_before_the_first_check_is_refused():
    with pytest.raises(ValueError):
        TurnRule(text_unsure_by_ms=50, first_check_ms=100)
