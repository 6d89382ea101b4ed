"""Cancelling drops only what it owns: a turn's cancel its lines, a dropped preparation its
prepared lines; a notice about her servers (no turn's) is never dropped with either."""

from __future__ import annotations

import asyncio

from prepared_stand_ins import PreparingBrain
from test_voice_switching import GoneVoiceServer

from companion.events import EventBus, ReplyDelta
from companion.turns import TurnOwner
from companion.voice.fallback import RemoteVoice
from companion.voice.sound.audio import WavSink
from companion.voice.speaking.mouth import Mouth
from companion.voice.speaking.speaker import Speaker
from companion.voice.turns.preparing import ReplyPreparer

NOTICE = "My voice server isn't answering, so I'm using my own voice."


class Heard:
    """The lines her speaker starts playing, and an event for the first."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.first = asyncio.Event()

    def __call__(self, line) -> None:
        self.lines.append(line.text)
        self.first.set()

    def __eq__(self, other) -> bool:
        return self.lines == other

    def __repr__(self) -> str:
        return repr(self.lines)


def _speaker(synthesizer, *, realtime: bool = True) -> tuple[Speaker, WavSink, Heard]:
    sink = WavSink(lambda: 0.0, rate=synthesizer.sample_rate, realtime=realtime)
    speaker = Speaker(synthesizer, sink)
    started = Heard()
    speaker.on_playing = started
    return speaker, sink, started


async def _first_line_playing(started: Heard) -> None:
    await started.first.wait()


async def test_cancelling_drops_her_reply_but_a_notice_waiting_behind_it_still_plays(piper_voice):
    speaker, _sink, started = _speaker(piper_voice)
    speaker.say("The first sentence of her answer is fairly long to say.", turn=1)
    speaker.say("The second sentence of her answer.", turn=1)
    speaker.say(NOTICE, notice=True)
    speaker.say("A preview line of the settings.")
    await _first_line_playing(started)
    speaker.cancel()
    await speaker.idle.wait()
    await speaker.close()
    assert started == ["The first sentence of her answer is fairly long to say.", NOTICE]


async def test_a_notice_playing_when_a_turn_is_interrupted_plays_to_its_end(piper_voice):
    speaker, sink, started = _speaker(piper_voice)
    speaker.say(NOTICE, notice=True)
    speaker.say("Her answer to the question.", turn=4)
    await _first_line_playing(started)
    speaker.interrupt(4)  # the user talked over her while she said the notice
    await speaker.idle.wait()
    await speaker.close()
    assert started == [NOTICE]
    whole = await piper_voice.synthesize(NOTICE)
    assert sink.audio().size >= 0.95 * whole.size  # not cut: the notice was no part of turn 4


async def test_interrupting_one_turn_leaves_the_lines_of_the_next(piper_voice):
    speaker, _sink, started = _speaker(piper_voice)
    speaker.say("The old answer is a fairly long sentence to say.", turn=1)
    speaker.say("More of the old answer.", turn=1)
    speaker.say("The new answer.", turn=2)  # already queued when turn 1's interruption arrives
    await _first_line_playing(started)
    speaker.interrupt(1)
    await speaker.idle.wait()
    await speaker.close()
    assert started == ["The old answer is a fairly long sentence to say.", "The new answer."]


async def test_closing_her_voice_drops_notices_too(piper_voice):
    speaker, sink, started = _speaker(piper_voice)
    speaker.say("Her answer, fairly long to say out loud.", turn=1)
    speaker.say(NOTICE, notice=True)
    await _first_line_playing(started)
    await speaker.close()
    assert started == ["Her answer, fairly long to say out loud."]


class _Voice:
    """Her mouth on a voice server that is gone, with her own piper to fall back on, the way
    a session builds it: bus, turns, speaker, mouth and the preparer of replies in the pause."""

    def __init__(self, piper_voice) -> None:
        self.bus = EventBus()
        self.synthesizer = RemoteVoice(GoneVoiceServer(), lambda: piper_voice, self.bus)
        self.speaker, self.sink, self.started = _speaker(self.synthesizer, realtime=False)
        self.mouth = Mouth(bus=self.bus, speaker=self.speaker, turns=TurnOwner(self.bus),
                           keep_heard=lambda _turn, _text: None)
        mouths_hook = self.speaker.on_playing  # the mouth reports her speaking through it
        self.speaker.on_playing = lambda line: (self.started(line), mouths_hook(line))
        self.notice_ready = asyncio.Event()
        self.mouth.on_synthesized.append(lambda line: self.notice_ready.set() if line.notice else None)
        self.brain = PreparingBrain()
        self.preparer = ReplyPreparer(self.brain, self.speaker)

    async def prepare_while_the_server_dies(self) -> None:
        """The user pauses: a reply is prepared; its first sentence finds the voice server gone,
        and the switch's notice is said meanwhile, her mouth still held."""
        self.preparer.start(1, "What is the capital of France?")
        self.brain.turns[-1].hold.emit(ReplyDelta("Paris is the capital of France. "))
        # The notice was queued when the switch ended, after the prepared lines: synthesized last.
        await asyncio.wait_for(self.notice_ready.wait(), 60)
        assert self.started == [] and self.speaker.holding and self.synthesizer.local is not None

    async def close(self) -> None:
        await self.speaker.idle.wait()
        await self.speaker.close()
        self.mouth.close()


async def test_a_dropped_preparation_keeps_the_notice_her_voice_server_left_while_it_was_held(piper_voice):
    voice = _Voice(piper_voice)
    await voice.prepare_while_the_server_dies()
    voice.preparer.drop()  # the user went on talking
    await voice.close()
    assert voice.started == ["My voice server on 192.0.2.7 isn't answering, so I'm using my own voice on this computer."]


async def test_a_prepared_reply_that_is_wanted_plays_with_the_notice(piper_voice):
    voice = _Voice(piper_voice)
    await voice.prepare_while_the_server_dies()
    voice.speaker.release()  # the user had finished: the prepared reply plays, then the notice
    await voice.close()
    *reply, notice = voice.started.lines
    assert " ".join(reply) == "Paris is the capital of France."
    assert notice == "My voice server on 192.0.2.7 isn't answering, so I'm using my own voice on this computer."
