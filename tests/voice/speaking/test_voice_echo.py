"""Her own voice coming back through the microphone: dropped only when it is word for word hers,
at least four words heard while that line was playing, the opening words of a line heard as
it began, or the whole of a short line heard while it played. One-word answers reach her (only the ear, judging what goes on with a question and
stopped her, may take her line's first word as hers)."""

from __future__ import annotations

from companion.voice.speaking.echo import PlayedLine, is_echo

ASKING = PlayedLine("Should I delete it? Say yes or no, or stop to cancel.", started=100.0, ended=103.5)
REPORT = PlayedLine("I opened the report for you. It has three pages about the new project.",
                    started=100.0, ended=104.0)


def heard_while_playing(text: str, line: PlayedLine) -> bool:
    return is_echo(text, [line], spoken_from=line.started + 0.5, spoken_to=line.ended, now=line.ended + 0.5)


def test_short_answers_are_never_echo_even_when_her_line_contained_them():
    for answer in ("Yes.", "No.", "Stop.", "What?", "Yes or no", "No, thank you."):
        assert not heard_while_playing(answer, ASKING), answer


def test_words_she_never_said_in_that_order_are_the_users():
    for heard in ("Open the report.", "Cancel it.", "What about the new report?", "Delete the three pages now"):
        assert not heard_while_playing(heard, REPORT), heard


def test_four_or_more_of_her_words_in_order_while_she_plays_are_echo():
    assert heard_while_playing("It has three pages", REPORT)
    assert heard_while_playing("I opened the report for you.", REPORT)
    # An echo may run across her sentence boundary, whatever the punctuation.
    assert heard_while_playing("for you, it has three pages", REPORT)


def test_the_same_words_said_after_she_went_quiet_are_the_users():
    # The user repeats her line a few seconds after she stopped: not acoustically hers.
    assert not is_echo("It has three pages", [REPORT], spoken_from=REPORT.ended + 2.0,
                       spoken_to=REPORT.ended + 3.5, now=REPORT.ended + 4.0)


def test_a_line_played_long_ago_is_not_echo_now():
    assert not is_echo("It has three pages", [REPORT], spoken_from=REPORT.started, spoken_to=REPORT.ended,
                       now=REPORT.ended + 30.0)


def test_a_line_still_playing_counts_until_now():
    playing = PlayedLine("The weather today is sunny and warm.", started=50.0)
    assert is_echo("the weather today is sunny", [playing], spoken_from=50.4, spoken_to=52.0, now=52.2)


def test_the_opening_words_of_her_line_heard_as_it_began_are_echo():
    # Her sentence's onset leaked past the canceller after the quiet before it.
    second = PlayedLine("It was a sunny day.", started=110.0, ended=111.2)
    assert is_echo("It was", [REPORT, second], spoken_from=110.15, spoken_to=110.5, now=110.6)
    assert is_echo("I opened the", [REPORT], spoken_from=REPORT.started - 0.1, spoken_to=REPORT.started + 0.7,
                   now=REPORT.started + 0.8)


def test_a_few_words_of_hers_are_the_users_unless_they_open_her_line_as_it_begins():
    # The same short words, later in her line, or said a second after it began.
    assert not is_echo("three pages", [REPORT], spoken_from=REPORT.started + 2.5, spoken_to=REPORT.started + 3.0,
                       now=REPORT.started + 3.2)
    assert not is_echo("I opened", [REPORT], spoken_from=REPORT.started + 1.2, spoken_to=REPORT.started + 1.6,
                       now=REPORT.started + 1.8)


def test_one_word_is_never_echo_even_as_her_line_begins_with_it():
    answer = PlayedLine("Yes, I can do that.", started=200.0, ended=201.5)
    assert not is_echo("Yes.", [answer], spoken_from=200.1, spoken_to=200.4, now=200.5)


def test_one_word_opening_her_line_as_it_began_is_echo_only_where_the_caller_allows_one():
    # The ear asks so of what came right after a question and stopped her: no answer is eaten.
    story = PlayedLine("Once upon a time there was a fox.", started=300.0, ended=302.0)
    assert is_echo("Once.", [story], spoken_from=300.1, spoken_to=300.4, now=300.5, opening_words=1)
    assert not is_echo("Once.", [story], spoken_from=301.2, spoken_to=301.5, now=301.6, opening_words=1)
    assert not is_echo("Twice.", [story], spoken_from=300.1, spoken_to=300.4, now=300.5, opening_words=1)


def test_the_whole_of_a_short_line_heard_while_it_played_is_echo_however_late_its_onset_was_heard():
    # Beside two busy loops the ear heard her "I will stop." begin 0.63 s into the line.
    short = PlayedLine("I will stop.", started=400.0, ended=400.76)
    assert is_echo("I will stop.", [short], spoken_from=400.63, spoken_to=401.0, now=401.3)
    # Heard with a sound held in front of it (from before the line began), it is still hers.
    assert is_echo("I will stop.", [short], spoken_from=399.2, spoken_to=401.0, now=401.3)


def test_the_whole_of_a_short_line_said_after_she_went_quiet_is_the_users():
    short = PlayedLine("I will stop.", started=400.0, ended=400.76)
    assert not is_echo("I will stop.", [short], spoken_from=402.0, spoken_to=402.8, now=403.0)
    assert not is_echo("I will", [short], spoken_from=400.63, spoken_to=401.0, now=401.3)  # a part, late
