"""When her thinking line is due: from the end of the user's speech, but never before her brain
has had a moment of its own, and never once her words are on their way."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from companion.events import EventBus, ReplyDelta, SpeakingChanged, ToolStarted, TurnSource
from companion.turns import TurnOwner
from companion.voice.speaking.thinking_aloud import GRACE_S, ThinkingAloud


class QuietMouth:
    """A mouth with nothing to say; `said` is what she was given to think aloud."""

    busy = False

    def __init__(self) -> None:
        self.said: list[tuple[str, int, float]] = []
        self.spoke = asyncio.Event()

    def think_aloud(self, text: str, turn: int) -> None:
        self.said.append((text, turn, time.monotonic()))
        self.spoke.set()


def thinking(after_s: float = 1.2) -> tuple[ThinkingAloud, TurnOwner, QuietMouth, EventBus]:
    bus = EventBus()
    turns, mouth = TurnOwner(bus), QuietMouth()
    aloud = ThinkingAloud(bus=bus, turns=turns, mouth=mouth, line=lambda n: f"line {n}", after_s=lambda: after_s)
    return aloud, turns, mouth, bus


async def test_when_hearing_the_words_took_longer_than_the_wait_her_brain_still_gets_a_moment():
    aloud, turns, mouth, _bus = thinking(after_s=1.2)
    aloud.arm(since=time.monotonic() - 5.0)  # the user stopped 5 s ago: long overdue
    began = time.monotonic()
    turn = turns.begin(TurnSource.SPOKEN, "why?")
    await asyncio.wait_for(mouth.spoke.wait(), 5)
    [(text, said_for, at)] = mouth.said
    assert (text, said_for) == ("line 0", turn.id) and at - began >= GRACE_S * 0.9


async def test_her_words_on_their_way_or_another_turn_call_off_the_line():
    aloud, turns, mouth, bus = thinking()
    aloud.arm(since=None)
    turn = turns.begin(TurnSource.SPOKEN, "why?")
    assert aloud.armed
    bus.emit(SpeakingChanged(False, turn.id, queued=True))  # her answer's first sentence is queued
    assert not aloud.armed
    aloud.arm(since=None)
    turns.begin(TurnSource.TYPED, "hello")  # a typed turn is never waited on aloud
    assert not aloud.armed and mouth.said == []
    aloud.close()


async def _spoken_turn(aloud, turns, bus, *, first_words_after_s: float, first_words=None) -> None:
    """One spoken turn whose brain writes its first words (or calls a tool) after that long."""
    first_words = first_words or ReplyDelta("Well,")
    aloud.arm(since=None)
    turn = turns.begin(TurnSource.SPOKEN, "why?")
    await asyncio.sleep(first_words_after_s)  # her brain, thinking: the time is the point here
    bus.emit(dataclasses.replace(first_words, turn=turn.id))


async def test_after_two_turns_her_brain_was_slower_than_the_wait_the_next_line_comes_as_the_turn_begins():
    # A local model on a laptop: its first words came after the line was due and after the grace,
    # twice (once a tool call).
    aloud, turns, mouth, bus = thinking(after_s=0.05)
    slow = GRACE_S + 0.01
    await _spoken_turn(aloud, turns, bus, first_words_after_s=slow)
    await _spoken_turn(aloud, turns, bus, first_words_after_s=slow, first_words=ToolStarted("get_time", "c1"))
    assert aloud.brain_is_slow
    mouth.spoke.clear()  # the two slow turns had their lines
    aloud.arm(since=None)
    turn = turns.begin(TurnSource.SPOKEN, "and tomorrow?")
    # Said at once, not after the grace every other turn gets.
    await asyncio.wait_for(mouth.spoke.wait(), GRACE_S / 2)
    assert mouth.said[-1][1] == turn.id
    aloud.close()


async def test_a_brain_that_answers_in_time_keeps_the_wait_and_one_slow_turn_is_not_enough():
    aloud, turns, mouth, bus = thinking(after_s=0.05)
    await _spoken_turn(aloud, turns, bus, first_words_after_s=0.0)
    await _spoken_turn(aloud, turns, bus, first_words_after_s=GRACE_S + 0.01)
    assert not aloud.brain_is_slow
    mouth.spoke.clear()
    aloud.arm(since=None)
    began = time.monotonic()
    turns.begin(TurnSource.SPOKEN, "and tomorrow?")
    await asyncio.wait_for(mouth.spoke.wait(), 5)
    assert mouth.said[-1][2] - began >= GRACE_S * 0.9
    aloud.close()
