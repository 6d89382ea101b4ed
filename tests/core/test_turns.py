"""Turn ownership: every turn has an id, one owner decides the current one, an interruption
is one event, and the mouth speaks only for the current turn (real piper, a real-time sink)."""

from __future__ import annotations

import asyncio
import time

import pytest

from companion.events import (
    EventBus,
    ReplyDelta,
    ReplyDone,
    Speak,
    SpeakingChanged,
    SpeechKind,
    TurnFinished,
    TurnInterrupted,
    TurnSource,
    TurnStarted,
    turn_scope,
)
from companion.turns import TurnOwner
from companion.voice.sound.audio import WavSink
from companion.voice.speaking.mouth import Mouth
from companion.voice.speaking.speaker import Speaker


def test_events_emitted_inside_a_turn_carry_its_id_and_others_do_not():
    bus = EventBus()
    seen: list = []
    bus.subscribe(seen.append)
    owner = TurnOwner(bus)
    turn = owner.begin(TurnSource.TYPED, "hi")
    with turn_scope(turn.id):
        bus.emit(ReplyDelta("Hello"))
    bus.emit(Speak(SpeechKind.SAY, "Outside any turn."))
    assert seen == [TurnStarted(turn.id, TurnSource.TYPED, "hi"), ReplyDelta("Hello", turn=turn.id),
                    Speak(SpeechKind.SAY, "Outside any turn.")]


def test_a_new_turn_interrupts_the_live_one_with_one_event():
    bus = EventBus()
    seen: list = []
    bus.subscribe(seen.append)
    owner = TurnOwner(bus)
    first = owner.begin(TurnSource.SPOKEN, "tell me a story")
    second = owner.begin(TurnSource.SPOKEN, "stop")
    assert [e for e in seen if isinstance(e, TurnInterrupted)] == [TurnInterrupted(first.id, "a new turn")]
    assert owner.is_current(second.id) and not owner.is_current(first.id)
    owner.thought(second.id)
    assert not owner.interrupt("Esc")  # nothing live: no event
    assert len([e for e in seen if isinstance(e, TurnInterrupted)]) == 1


@pytest.fixture
async def mouth(piper_voice):
    bus = EventBus()
    owner = TurnOwner(bus)
    started = time.monotonic()
    sink = WavSink(lambda: time.monotonic() - started, rate=piper_voice.sample_rate, realtime=True)
    speaker = Speaker(piper_voice, sink)
    kept: list[tuple[int, str]] = []
    mouth = Mouth(bus=bus, speaker=speaker, turns=owner, keep_heard=lambda t, text: kept.append((t, text)))
    yield bus, owner, speaker, kept
    mouth.close()
    await speaker.close()


async def test_events_of_an_interrupted_turn_that_arrive_late_are_never_spoken(mouth):
    bus, owner, speaker, kept = mouth
    played: list[str] = []
    speaker.on_playing = (lambda hook: lambda line: (played.append(line.text), hook(line)))(speaker.on_playing)
    playing = asyncio.get_running_loop().create_future()
    bus.subscribe(lambda e: isinstance(e, SpeakingChanged) and e.speaking and not playing.done()
                  and playing.set_result(None))
    first = owner.begin(TurnSource.TYPED, "tell me a story")
    with turn_scope(first.id):
        bus.emit(ReplyDelta("Once upon a time there was a fox. "))
    await playing
    owner.interrupt("Esc")
    # The interrupted turn's model keeps streaming for a moment, and its tool narrates:
    with turn_scope(first.id):
        bus.emit(ReplyDelta("It lived in a forest. It was very happy. "))
        bus.emit(Speak(SpeechKind.COMPLETE, "Found the forest.", tool="look"))
        bus.emit(ReplyDone("It lived in a forest."))
        bus.emit(TurnFinished("It lived in a forest.", "neutral", interrupted=True))
    await speaker.idle.wait()  # the cut-off sentence stops; nothing of the above is queued
    # The next turn speaks normally, and so does a reminder after it.
    second = owner.begin(TurnSource.TYPED, "what time is it?")
    with turn_scope(second.id):
        bus.emit(ReplyDelta("It is noon."))
        bus.emit(TurnFinished("It is noon.", "neutral"))
    owner.thought(second.id)
    late_again = ReplyDelta("The fox ran away.", turn=first.id)
    bus.emit(late_again)
    await speaker.idle.wait()
    reminder = owner.begin(TurnSource.REMINDER, "Reminder: stretch.")
    with turn_scope(reminder.id):
        bus.emit(Speak(SpeechKind.SAY, "Reminder: stretch."))
    await speaker.idle.wait()
    # (Her first fragment is cut short for speed: the story began as "Once upon a time there was".)
    assert played[0].startswith("Once upon a time") and played[1:] == ["It is noon.", "Reminder: stretch."]
    assert kept == [(first.id, "")]  # cut off mid-sentence: the user heard no whole sentence


async def test_the_history_is_told_exactly_the_sentences_that_were_played(mouth):
    bus, owner, speaker, kept = mouth
    finished: list[str] = []
    turn = owner.begin(TurnSource.SPOKEN, "tell me two things")
    second_playing = asyncio.get_running_loop().create_future()

    def on_playing(line, hook=speaker.on_playing):
        finished.append(line.text)
        hook(line)
        if len(finished) == 2 and not second_playing.done():
            second_playing.set_result(None)

    speaker.on_playing = on_playing
    with turn_scope(turn.id):
        bus.emit(ReplyDelta("First thing. Second thing is longer than the first one. Third thing."))
        bus.emit(TurnFinished("First thing. Second thing is longer than the first one. Third thing.", "neutral"))
    owner.thought(turn.id)
    await second_playing  # the first sentence was played whole, the second is playing
    assert owner.interrupt("barge-in")
    assert kept == [(turn.id, "First thing.")]
