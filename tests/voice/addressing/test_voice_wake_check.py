"""A wake word counts only when the utterance's words start with it, and the call is not part
of the question (voice.addressing.addressed with the wake word's spellings)."""

from __future__ import annotations

import pytest

from companion.config import VoiceSettings
from companion.voice.addressing.addressed import (
    Addressing,
    AddressSettings,
    Listening,
    address_settings,
)
from companion.voice.addressing.heard import wake_forms
from companion.voice.addressing.wake import BUNDLED_WAKE_WORDS


def woken(**kwargs) -> Addressing:
    policy = Addressing(AddressSettings(mode=Listening.CALLED, names=("Mira",), name_wakes=True,
                                        wake_forms=wake_forms("okay_nabu"), **kwargs))
    policy.call(1.0, wake=True)
    return policy


@pytest.mark.parametrize(("heard", "question"), [
    ("Okay, Naboo, what time is it?", "What time is it?"),
    ("Okay, now move what time is it?", "What time is it?"),
    ("Okay Arbu, what is the capital of France?", "What is the capital of France?"),
    ("Okay, I'll move. Set a timer for ten minutes.", "Set a timer for ten minutes."),
])
def test_a_wake_word_heard_as_whisper_writes_it_starts_a_turn_and_leaves_the_question_alone(heard, question):
    verdict = woken().judge(heard, 0.5, 3.0)
    assert verdict.turn and verdict.reason == "called"
    assert verdict.question(heard) == question


@pytest.mark.parametrize("heard", ["Okay, now, what do we do?", "Okay, now let's start.", "Okay, noted.",
                                   "Okay, okay, I'll do the dishes."])
def test_a_near_miss_the_detector_let_through_starts_no_turn_and_uses_the_call_up(heard):
    policy = woken()
    verdict = policy.judge(heard, 0.5, 3.0)
    assert not verdict.turn and verdict.reason == "near-miss"
    # Its words are dropped, and the next voice within the call's seconds is not called either.
    assert policy.judge("What time is it?", 3.5, 5.0).reason == "not-called"


def test_without_the_spellings_a_near_miss_the_detector_heard_still_starts_a_turn():
    """The check bites: with no spellings to compare, the detector alone decides (the old rule)."""
    policy = Addressing(AddressSettings(mode=Listening.CALLED, names=("Mira",)))
    policy.call(1.0, wake=True)
    assert policy.judge("Okay, now, what do we do?", 0.5, 3.0).turn


def test_a_bare_wake_word_then_the_question_is_answered_whole():
    policy = woken()
    assert policy.judge("Okay, Naboo.", 0.5, 1.5).reason == "bare-call"
    verdict = policy.judge("What time is it?", 2.5, 4.0)
    assert verdict.turn and verdict.reason == "called" and verdict.question("What time is it?") == "What time is it?"


def test_a_wake_word_heard_before_the_utterance_began_needs_no_words_of_it():
    """A call Whisper heard as nothing (no verdict of its own): the question after it is still called."""
    policy = woken()
    assert policy.judge("What time is it?", 1.5, 3.0).turn


def test_her_name_with_a_near_miss_is_still_her_name_and_keeps_it():
    policy = woken()
    verdict = policy.judge("Mira, what time is it?", 0.5, 3.0)
    assert verdict.turn and verdict.reason == "name"
    assert verdict.question("Mira, what time is it?") == "Mira, what time is it?"


def test_push_to_talk_needs_no_words_of_a_call():
    policy = Addressing(AddressSettings(mode=Listening.CALLED, names=("Mira",), wake_forms=wake_forms("okay_nabu")))
    policy.call(1.0)
    assert policy.judge("Okay, now, what do we do?", 0.5, 3.0).turn


@pytest.mark.parametrize("heard", ["Hey John, are you coming?", "Okay Sam, what's for dinner?", "Hi Anna. Can you help?"])
def test_inside_the_follow_up_window_a_line_calling_someone_else_by_name_starts_no_turn(heard):
    policy = Addressing(AddressSettings(mode=Listening.CALLED, names=("Mira",)))
    policy.answering()
    policy.answered(10.0, "Would you like more?")
    verdict = policy.judge(heard, 11.0, 13.0)
    assert not verdict.turn and verdict.reason == "someone-else"


def test_inside_the_follow_up_window_a_greeting_and_her_own_name_or_a_question_is_still_hers():
    policy = Addressing(AddressSettings(mode=Listening.CALLED, names=("Mira",)))
    policy.answering()
    policy.answered(10.0, "Done.")
    assert policy.judge("Hey, what about Spain?", 11.0, 13.0).reason == "follow-up"
    assert policy.judge("And Italy?", 13.5, 14.5).reason == "follow-up"


def phrase_heard(wake_word: str = "hey_jarvis", *, name_wakes: bool = True) -> Addressing:
    """When called, the detector silent: only the words can call her."""
    return Addressing(AddressSettings(mode=Listening.CALLED, names=("Mira",), name_wakes=name_wakes,
                                      wake_phrase=BUNDLED_WAKE_WORDS[wake_word], wake_forms=wake_forms(wake_word)))


@pytest.mark.parametrize(("wake_word", "heard", "question"), [
    ("hey_jarvis", "Hey Jarvis, what time is it?", "What time is it?"),
    ("hey_jarvis", "Hi Jarvis. Set a timer for ten minutes.", "Set a timer for ten minutes."),
    ("alexa", "Alexa, what is the capital of France?", "What is the capital of France?"),
    ("okay_nabu", "Okay, Nabu, what's the weather?", "What's the weather?"),
])
def test_the_wake_words_own_phrase_in_the_words_calls_her_while_her_name_can_though_the_detector_heard_nothing(
        wake_word, heard, question):
    verdict = phrase_heard(wake_word).judge(heard, 0.5, 3.0)
    assert verdict.turn and verdict.reason == "wake-phrase"
    assert verdict.question(heard) == question


@pytest.mark.parametrize(("wake_word", "heard"), [
    ("hey_jarvis", "Hey, Travis, come here."), ("hey_jarvis", "Hey Jarmis, what time is it?"),
    ("hey_jarvis", "Jarvis is the butler in that film."), ("alexa", "Alex, stop that."),
    ("alexa", "Alexa's birthday is on Sunday."), ("okay_nabu", "Okay, now move the table."),
    ("hey_mycroft", "Hey, Minecraft again?"),
])
def test_words_only_near_the_wake_phrase_do_not_call_her_without_the_detector(wake_word, heard):
    assert not phrase_heard(wake_word).judge(heard, 0.5, 3.0).turn


def test_the_wake_phrase_in_words_alone_calls_her_only_while_her_name_can():
    """With her name off her hearing skips the room's words, and only the detector hears a call."""
    assert phrase_heard(name_wakes=False).judge("Hey Jarvis, what time is it?", 0.5, 3.0).reason == "not-called"


def test_the_wake_phrase_alone_in_words_is_a_bare_call_and_the_question_after_it_is_hers():
    policy = phrase_heard()
    assert policy.judge("Hey Jarvis.", 0.5, 1.5).reason == "bare-call"
    verdict = policy.judge("What time is it?", 2.5, 4.0)
    assert verdict.turn and verdict.question("What time is it?") == "What time is it?"


def test_settings_from_the_users_voice_carry_the_chosen_wake_words_phrase():
    settings = address_settings(VoiceSettings(listening="called", wake_word="hey_jarvis"))
    assert settings.wake_phrase == "Hey Jarvis" and "hey jarvis" in settings.wake_forms


def test_the_wake_phrase_said_under_push_to_talk_is_not_part_of_the_question():
    policy = phrase_heard()
    policy.call(1.0)  # push-to-talk
    verdict = policy.judge("Hey Jarvis, what time is it?", 0.5, 3.0)
    assert verdict.turn and verdict.question("Hey Jarvis, what time is it?") == "What time is it?"
