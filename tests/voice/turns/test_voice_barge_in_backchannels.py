"""What stopped her by talking over her and asks nothing of her: listening noises as Whisper
spells them, and sounds it writes no word for."""

from __future__ import annotations

import pytest

from companion.voice.turns.barge_in import has_words, only_backchannel


@pytest.mark.parametrize("heard", ["", "Mm-hmm.", "MMMM", "M. M.", "mm mm", "Uh-huh.", "Uh-uh", "Hmm?", "Yeah.",
                                   "Yeah, yeah.", "Oh, I see.", "Okay.", "[coughs]", "(clears throat)", "*cough*"])
def test_a_listening_noise_or_a_cough_over_her_asks_nothing_of_her(heard):
    assert only_backchannel(heard)


@pytest.mark.parametrize("heard", ["Stop.", "Stop, wait.", "Wait.", "Yes.", "No.", "Okay, stop.", "And mm",
                                   "Please stop talking now.", "Yeah, yeah, yeah, yeah.", "What?"])
def test_words_over_her_that_ask_something_are_an_interruption(heard):
    assert not only_backchannel(heard)


@pytest.mark.parametrize(("heard", "words"), [("Mm-hmm.", True), ("Right.", True), ("Oh, I see.", True),
                                              ("", False), ("[coughs]", False), ("(clears throat)", False),
                                              ("*cough* ...", False)])
def test_a_backchannel_with_words_goes_to_the_transcript_and_a_cough_does_not(heard, words):
    assert has_words(heard) is words
