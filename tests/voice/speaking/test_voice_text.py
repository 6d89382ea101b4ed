"""What she says aloud: the speech filter, the streaming sentence splitter, echo and phantoms."""

from __future__ import annotations

from companion.voice.hearing.stt import is_phantom
from companion.voice.speaking.sentences import SentenceSplitter
from companion.voice.speaking.speech_filter import CODE_ON_SCREEN, speakable


def split_streamed(text: str, step: int = 3) -> list[str]:
    splitter = SentenceSplitter()
    out: list[str] = []
    for i in range(0, len(text), step):
        out += splitter.push(text[i:i + step])
    return out + splitter.flush()


def test_markdown_symbols_are_not_spoken():
    assert speakable("## Plan\n**Bold** and _soft_ words, ~~gone~~ and `inline`.") == (
        "Plan. Bold and soft words, gone and inline."
    )


def test_a_code_block_becomes_a_pointer_to_the_screen():
    assert speakable("Here it is:\n```python\nprint('hi')\n```\nEnjoy.") == f"Here it is: {CODE_ON_SCREEN} Enjoy."


def test_urls_and_paths_become_short_stand_ins():
    said = speakable("Read https://www.example.com/docs/page?x=1, then open /home/ann/notes/todo.md.")
    assert said == "Read a link to example.com, then open the file todo.md."


def test_markdown_links_keep_their_words():
    assert speakable("See [the manual](https://example.com/manual).") == "See the manual."


def test_emoji_and_emotion_tags_vanish():
    assert speakable("[happy] Done! 🎉👍🏽 [sad]") == "Done!"


def test_a_list_is_read_as_separate_phrases():
    assert speakable("Two things:\n- eggs\n- milk") == "Two things: eggs. milk"


def test_text_with_nothing_worth_saying_is_empty():
    assert speakable("```\ncode only\n```".replace("code only", "x = 1")) == CODE_ON_SCREEN
    assert speakable("🎉 ** ") == ""


def test_the_first_fragment_is_cut_at_its_first_comma_so_it_sounds_soon():
    pieces = split_streamed("Well, the weather in Paris is lovely, sunny and warm. It will rain later, sadly.")
    assert pieces == ["Well,", "the weather in Paris is lovely, sunny and warm.", "It will rain later, sadly."]


def test_a_first_sentence_without_a_comma_is_cut_after_five_words():
    # Six words took piper ~90 ms, ~100 in Jeeves's and Pip's pitch-shifted voices (bench/voices.py).
    pieces = split_streamed("I found three files in your workspace that mention the report. Here they are.")
    assert pieces == ["I found three files in", "your workspace that mention the report.", "Here they are."]
    assert split_streamed("I found three files in there.") == ["I found three files in there."]


def test_a_first_sentence_is_not_cut_to_leave_a_word_or_two_said_alone():
    # "Here is a short story | for you." would end her first piece and say two words as a sentence.
    assert split_streamed("Here is a short story for you. Once upon a time.") == [
        "Here is a short story for you.", "Once upon a time."]
    assert split_streamed("Here is a short story just for you.")[0] == "Here is a short story"


def test_a_first_sentence_given_whole_with_a_late_comma_is_cut_after_five_words_not_at_the_comma():
    # A fast brain or a prepared reply hands the whole sentence over at once: cut at its comma, her
    # first piece would be ten words (~150 ms of piper before her first sound instead of ~80).
    splitter = SentenceSplitter()
    pieces = splitter.push("The meeting with the architects from Chicago moved to Thursday, at ten. ")
    assert pieces == ["The meeting with the architects", "from Chicago moved to Thursday, at ten."]
    assert split_streamed("Well, it moved to Thursday.") == ["Well,", "it moved to Thursday."]


def test_sentences_end_at_punctuation_but_not_at_abbreviations_or_decimals():
    pieces = split_streamed("Dr. Smith paid 3.5 dollars. Is that cheap? Yes!")
    assert pieces == ["Dr. Smith paid 3.5 dollars.", "Is that cheap?", "Yes!"]


def test_a_code_block_is_kept_whole_while_it_streams():
    pieces = split_streamed("Look:\n```\nfor i in range(3):\n    print(i)\n```\nThat prints three lines.", step=2)
    assert pieces[0] == "Look:"
    assert pieces[1].startswith("```") and pieces[1].endswith("```")
    assert pieces[2] == "That prints three lines."


def test_a_sentence_still_streaming_is_held_back():
    splitter = SentenceSplitter()
    assert splitter.push("This is not finished yet") == []
    assert splitter.flush() == ["This is not finished yet"]


def test_whisper_phantoms_of_silence_are_dropped():
    for phantom in ("", " Thank you.", "you", "[MUSIC]", "Thanks for watching!"):
        assert is_phantom(phantom), phantom
    assert not is_phantom("Thank you for the tea.")


def test_a_decoding_loop_is_recognised_so_the_full_window_is_used_instead():
    from companion.voice.hearing.stt import _looks_repeated

    assert _looks_repeated("Play some music. Play some music.")
    assert not _looks_repeated("Play some music, please, some music.")
