"""Her speaker paused by someone talking over her: the rest of her line from the word she was in,
then the lines behind it, each counted as said once; or, cancelled while paused, nothing more."""

from __future__ import annotations

import asyncio

import numpy as np

from companion.events import SpeechKind
from companion.voice.sound.audio import WavSink
from companion.voice.speaking.speaker import RESUME_BACK_S, Speaker, resume_from

FIRST = "This first sentence is fairly long to say, with a few words in it."
SECOND = "Second one."


async def paused_after(speaker: Speaker, sink: WavSink, blocks: int) -> None:
    """Pause her once `blocks` 20 ms blocks of her first line have played."""
    heard = asyncio.Event()
    count = 0

    def level(_level: float) -> None:
        nonlocal count
        count += 1
        if count == blocks:
            heard.set()

    sink.add_level_listener(level)
    await heard.wait()
    assert speaker.pause()


async def test_a_paused_line_goes_on_from_the_word_she_was_in_and_is_said_once(piper_voice):
    full = piper_voice.synthesize_sync(FIRST).size + piper_voice.synthesize_sync(SECOND).size
    sink = WavSink(lambda: 0.0, rate=piper_voice.sample_rate, realtime=True)
    speaker = Speaker(piper_voice, sink)
    try:
        speaker.say(FIRST, SpeechKind.SAY, 1)
        speaker.say(SECOND, SpeechKind.SAY, 1)
        await paused_after(speaker, sink, 75)  # 1.5 s into her first line
        assert speaker.paused and not speaker.playing and speaker.busy
        assert not speaker.idle.is_set()
        speaker.resume()
        await speaker.idle.wait()
        assert [line.text for line in speaker.played] == [FIRST, SECOND], [line.text for line in speaker.played]
    finally:
        await speaker.close()
    said = sink.audio().size
    # Said again only from just before the stop: never the whole line twice.
    assert full < said <= full + (RESUME_BACK_S + 0.1) * sink.rate


async def test_cancelled_while_paused_she_says_nothing_more_and_her_line_is_not_kept(piper_voice):
    sink = WavSink(lambda: 0.0, rate=piper_voice.sample_rate, realtime=True)
    speaker = Speaker(piper_voice, sink)
    try:
        speaker.say(FIRST, SpeechKind.SAY, 1)
        speaker.say(SECOND, SpeechKind.SAY, 1)
        await paused_after(speaker, sink, 50)
        played_before = sink.audio().size
        assert speaker.interrupt(1) == []
        await speaker.idle.wait()
        assert not speaker.paused
    finally:
        await speaker.close()
    assert sink.audio().size - played_before < 0.1 * sink.rate


def test_a_line_goes_on_from_the_quietest_moment_just_before_the_stop():
    rate = 1000
    audio = np.ones(3 * rate, dtype=np.float32)
    audio[2300:2320] = 0.0  # a gap between two words, 0.2 s before the stop at 2.5 s
    assert resume_from(audio, rate, started=10.0, stopped=12.5) == 2300
    assert resume_from(audio, rate, started=10.0, stopped=10.5) == 0  # under a second in: from the start
    assert resume_from(audio, rate, started=None, stopped=12.5) == 0
