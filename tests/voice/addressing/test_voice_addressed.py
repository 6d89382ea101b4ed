"""The policy of being called (voice.addressing.addressed): modes, her name, calls, the follow-up window."""

from __future__ import annotations

import pytest

from companion.config import VoiceSettings
from companion.persona.document import parse_personality
from companion.settings_file import settings_from_dict
from companion.voice.addressing.addressed import (
    CALL_S,
    Addressing,
    AddressSettings,
    Attention,
    Listening,
    address_settings,
    starts_with_name,
)

NAMES = ("Mira", "Mimi")


def called(**kwargs) -> Addressing:
    return Addressing(AddressSettings(mode=Listening.CALLED, names=NAMES, **kwargs))


def test_always_answer_takes_every_utterance() -> None:
    policy = Addressing(AddressSettings(mode=Listening.ALWAYS, names=NAMES))
    assert policy.judge("The weather tomorrow looks grim.", 0.0, 2.0).turn
    assert policy.attention(0.0) == Attention.AWAKE


def test_when_called_ignores_a_voice_that_does_not_call_her() -> None:
    policy = called()
    verdict = policy.judge("Did you see the game last night?", 0.0, 2.0)
    assert not verdict.turn and verdict.reason == "not-called"
    assert policy.attention(2.0) == Attention.DOZING


@pytest.mark.parametrize("text", ["Mira, what's the time?", "Hey Mira what's the time", "mimi, open my notes",
                                  "Okay, Mira. Set a timer."])
def test_her_name_or_an_alias_first_calls_her(text: str) -> None:
    verdict = called().judge(text, 0.0, 2.0)
    assert verdict.turn and verdict.reason == "name"


@pytest.mark.parametrize("text", ["Mirror. What is the capital of France?", "hey mirror, what time is it?",
                                  "Myra, open my notes"])
def test_her_name_as_whisper_spells_it_calls_her(text: str) -> None:
    assert called().judge(text, 0.0, 2.0).reason == "name"


@pytest.mark.parametrize("text", ["More coffee, anyone?", "Mary, pass the salt.", "Mirrors are cheap now."])
def test_a_word_that_only_rhymes_with_her_name_does_not_call_her(text: str) -> None:
    assert not called().judge(text, 0.0, 2.0).turn


def test_a_sentence_about_her_is_not_a_call() -> None:
    assert not called().judge("Mira and I went to the cinema on Sunday.", 0.0, 2.0).turn
    assert called().judge("Mira? Are you there?", 0.0, 2.0).turn


def test_her_name_later_in_the_sentence_does_not_call_her() -> None:
    assert not called().judge("I told Mira about the weather.", 0.0, 2.0).turn
    assert not starts_with_name("Miracle on 34th street is on", NAMES)


def test_her_name_does_not_call_her_when_the_setting_is_off() -> None:
    assert not called(name_wakes=False).judge("Mira, what's the time?", 0.0, 2.0).turn


def test_a_wake_word_during_the_utterance_calls_her() -> None:
    policy = called()
    policy.call(10.4)
    assert policy.judge("Okay Nabu, what's the weather like today?", 10.0, 13.0).turn
    # The call is used up: the next voice is not hers.
    assert not policy.judge("That was a nice walk.", 30.0, 32.0).turn


def test_a_bare_call_starts_no_turn_but_the_next_utterance_is_hers() -> None:
    policy = called()
    policy.call(5.0)
    bare = policy.judge("Okay, Nabu.", 4.4, 5.1)
    assert not bare.turn and bare.called and bare.reason == "bare-call"
    assert policy.attention(5.5) == Attention.ATTENTIVE
    assert policy.judge("What's on my calendar today?", 7.0, 9.0).turn


def test_a_call_too_long_before_the_utterance_does_not_count() -> None:
    policy = called()
    policy.call(1.0)
    assert not policy.judge("Pass the salt, please.", 1.0 + CALL_S + 2.0, 1.0 + CALL_S + 3.0).turn


def test_a_follow_up_inside_the_window_needs_no_call_and_one_after_it_does() -> None:
    policy = called(follow_up_s=8.0)
    assert policy.judge("Mira, what's the capital of France?", 0.0, 2.0).turn
    policy.answering()
    policy.answered(5.0, "It's Paris.")
    assert policy.attention(10.0) == Attention.ATTENTIVE
    assert policy.judge("And what about Spain?", 9.0, 11.0).reason == "follow-up"
    policy.answering()
    policy.answered(14.0, "Madrid.")
    assert policy.attention(23.0) == Attention.DOZING
    assert not policy.judge("And what about Italy?", 23.0, 25.0).turn


def test_someone_talking_to_someone_else_closes_the_window() -> None:
    policy = called()
    policy.answering()
    policy.answered(5.0, "It's Paris.")
    verdict = policy.judge("I think the bus leaves at six.", 6.0, 8.0)
    assert not verdict.turn and verdict.reason == "someone-else"
    # The window is closed now: even a question needs a call again.
    assert not policy.judge("Did you hear that?", 9.0, 10.0).turn


def test_words_that_stopped_her_mid_answer_are_hers_however_they_begin() -> None:
    policy = called()
    policy.answering()
    # Said over her: the echo canceller's double-talk cost "Please stop" its sense.
    assert not policy.judge("We start talking now.", 3.0, 4.0, peek=True).turn
    verdict = policy.judge("We start talking now.", 3.0, 4.0, stopped_her=True)
    assert verdict.turn and verdict.reason == "follow-up"
    # Outside her answer and its window it takes a call, as always.
    policy.answered(5.0, "Okay.")
    assert not policy.judge("We start talking now.", 20.0, 21.0, stopped_her=True).turn


def test_after_her_question_any_reply_inside_the_window_is_hers() -> None:
    policy = called()
    policy.answering()
    policy.answered(5.0, "Should I save it as a note?")
    assert policy.judge("The blue one.", 6.0, 7.0).turn


def test_peeking_uses_nothing_up() -> None:
    policy = called()
    policy.call(1.0)
    assert not policy.judge("Okay Nabu.", 0.5, 1.2, peek=True).turn
    assert policy.judge("Okay Nabu, what's the time?", 0.5, 3.0).turn


def test_what_is_said_under_the_push_to_talk_key_is_hers_however_late_its_end_is_judged() -> None:
    policy = called()
    policy.push_to_talk(1.0, True)
    policy.push_to_talk(6.0, False)  # let go 2 s after the question ended: an ear far behind judges it now
    verdict = policy.judge("What is the capital of France?", 1.5, 4.0)
    assert verdict.turn and verdict.reason == "called"
    assert not policy.judge("That was a nice walk.", 30.0, 32.0).turn  # the turn used the key up


def test_the_push_to_talk_key_held_through_two_questions_calls_her_for_both() -> None:
    policy = called()
    policy.push_to_talk(1.0, True)
    assert policy.judge("What is the capital of France?", 1.5, 3.0).turn
    assert policy.attention(9.0) == Attention.ATTENTIVE  # still held, long after the call
    assert policy.judge("And of Spain?", 1.0 + CALL_S + 4.0, 1.0 + CALL_S + 5.0).turn
    policy.push_to_talk(20.0, False)
    assert not policy.judge("Pass the salt, please.", 20.0 + CALL_S + 1.0, 20.0 + CALL_S + 2.0).turn


def test_words_that_ended_before_the_push_to_talk_key_went_down_are_not_hers() -> None:
    policy = called()
    policy.push_to_talk(5.0, True)
    assert not policy.judge("What is the capital of Spain?", 1.0, 4.0).turn


def test_push_to_talk_counts_in_muted_mode() -> None:
    policy = Addressing(AddressSettings(mode=Listening.MUTED, names=NAMES))
    assert not policy.judge("Mira, what's the time?", 0.0, 2.0).turn
    policy.call(0.1)
    assert policy.judge("What's the time?", 0.0, 2.0).turn


def test_old_settings_with_muted_keep_the_mode_to_come_back_to() -> None:
    voice = settings_from_dict({"voice": {"muted": True}}).voice
    assert voice.mode == "muted" and voice.listening == "called"  # the default mode to come back to
    assert voice.with_mode("called").mode == "called"
    assert VoiceSettings(listening="muted").mode == "muted"
    assert VoiceSettings(listening="called").with_mode("muted").with_mode("called").listening == "called"
    assert address_settings(VoiceSettings(listening="called"), NAMES).mode == Listening.CALLED
    with pytest.raises(ValueError):
        VoiceSettings(listening="sometimes")
    with pytest.raises(ValueError):
        VoiceSettings(wake_word="hey_siri")


def test_the_personality_front_matter_gives_her_aliases() -> None:
    text = "---\nname: Mira\naliases: [Mimi, Miranda]\n---\n"
    personality, _ = parse_personality(text)
    assert personality.aliases == ("Mimi", "Miranda")
    personality, _ = parse_personality("---\nname: Mira\naliases: Mimi, Mo\n---\n")
    assert personality.aliases == ("Mimi", "Mo")
