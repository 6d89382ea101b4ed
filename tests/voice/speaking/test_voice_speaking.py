"""Her mouth: speed, lip-sync levels, cancelling queued speech, and the muted microphone."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

from audio_env import speech
from brain_harness import make_config
from threadpoolctl import threadpool_info

from companion.config import VoiceSettings
from companion.events import EventBus, SpeechKind
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.models.thread import ModelThread
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, WavSource, write_wav
from companion.voice.speaking.speaker import Speaker


def test_a_faster_speed_setting_makes_her_speak_faster(piper_voice):
    sentence = "I will read this sentence at two different speeds."
    normal = piper_voice.synthesize_sync(sentence)
    piper_voice.speed = 1.5
    try:
        fast = piper_voice.synthesize_sync(sentence)
    finally:
        piper_voice.speed = 1.0
    assert fast.size < 0.8 * normal.size


async def test_her_output_levels_are_reported_for_lip_sync(piper_voice):
    sink = WavSink(lambda: 0.0, rate=piper_voice.sample_rate)
    levels: list[float] = []
    sink.add_level_listener(levels.append)
    speaker = Speaker(piper_voice, sink)
    speaker.say("Hello there, nice to meet you.")
    await speaker.idle.wait()
    await speaker.close()
    seconds = sink.audio().size / sink.rate
    assert abs(len(levels) - 1 - seconds / 0.02) <= 1  # one level per 20 ms block
    assert max(levels) > 0.05 and min(levels[:-1]) < 0.01  # words are loud, the gaps between them quiet
    assert levels[-1] == 0.0  # and her mouth closes when she is done


async def test_cancelling_stops_the_line_being_played_and_drops_the_queued_ones(piper_voice):
    sink = WavSink(lambda: 0.0, rate=piper_voice.sample_rate, realtime=True)
    speaker = Speaker(piper_voice, sink)
    playing = asyncio.Event()
    speaker.on_playing = lambda line: playing.set()
    for line in ("This first sentence is fairly long to say.", "Second one.", "Third one."):
        speaker.say(line, SpeechKind.SAY)
    await playing.wait()
    played = speaker.cancel()
    await speaker.idle.wait()
    await speaker.close()
    assert played == []
    assert sink.audio().size < 0.5 * sink.rate  # cut within a moment of starting


async def test_a_notice_said_while_a_prepared_reply_waits_still_plays_when_the_reply_is_dropped(piper_voice):
    sink = WavSink(lambda: 0.0, rate=piper_voice.sample_rate)
    speaker = Speaker(piper_voice, sink)
    played: list[str] = []
    speaker.on_playing = lambda line: played.append(line.text)
    speaker.hold()  # the user paused: a reply is prepared, her mouth shut
    speaker.say("The prepared first sentence.", prepared=True)
    speaker.say("My voice server isn't answering.", notice=True)  # a notice, for no turn
    speaker.say("And the prepared second one.", prepared=True)
    await asyncio.sleep(0.5)  # all synthesized, all waiting
    assert played == []
    speaker.drop_held()  # the user went on talking
    await speaker.idle.wait()
    await speaker.close()
    assert played == ["My voice server isn't answering."]


async def test_interrupting_her_answer_drops_its_lines_but_a_notice_waiting_behind_it_still_plays(piper_voice):
    sink = WavSink(lambda: 0.0, rate=piper_voice.sample_rate, realtime=True)
    speaker = Speaker(piper_voice, sink)
    started: list[str] = []
    speaker.on_playing = lambda line: started.append(line.text)
    speaker.say("The first sentence of her answer is fairly long to say.", turn=1)
    speaker.say("The second sentence of her answer.", turn=1)
    speaker.say("My voice server isn't answering.", notice=True)  # a notice, for no turn
    while not started:
        await asyncio.sleep(0.01)
    speaker.interrupt()  # the user starts a new question
    await speaker.idle.wait()
    await speaker.close()
    assert started == ["The first sentence of her answer is fairly long to say.", "My voice server isn't answering."]


async def test_after_an_interruption_the_rest_of_a_prepared_reply_never_plays(piper_voice):
    sink = WavSink(lambda: 0.0, rate=piper_voice.sample_rate, realtime=True)
    speaker = Speaker(piper_voice, sink)
    started: list[str] = []
    speaker.on_playing = lambda line: started.append(line.text)
    speaker.hold()
    speaker.say("The prepared first sentence is fairly long to say.", prepared=True)
    speaker.say("And the prepared second one.", prepared=True)
    speaker.release()  # the turn was confirmed: she speaks
    while not started:
        await asyncio.sleep(0.01)
    speaker.interrupt()
    await speaker.idle.wait()
    await speaker.close()
    assert started == ["The prepared first sentence is fairly long to say."]


def _thread_niceness() -> dict[int, int]:
    """The nice value of each thread of this process, by thread id (from /proc)."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        stat = (task / "stat").read_text()
        out[int(task.name)] = int(stat[stat.rindex(")") + 2:].split()[16])  # stat field 19: nice
    return out


def test_once_her_models_have_a_thread_numpy_does_its_sums_on_the_calling_thread_only():
    ModelThread("test").call(lambda: None)
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)


async def test_her_voice_runs_below_the_windows_priority_and_so_do_its_helper_threads(piper_voice):
    base = os.getpriority(os.PRIO_PROCESS, 0)
    await piper_voice.synthesize("Hello there.")
    niceness = _thread_niceness()
    # Her piper thread, and the onnxruntime thread it started when it loaded the voice.
    assert len([tid for tid, nice in niceness.items() if nice > base]) >= 2, niceness
    assert niceness[os.getpid()] == base  # the main thread (the window's) is not lowered


async def test_a_muted_microphone_hears_nothing_and_asks_nothing(tmp_path, scripted_brain, hearing, piper_voice):
    wav = tmp_path / "q.wav"
    write_wav(wav, speech(piper_voice, "What is the time?"), 16_000)
    companion = Companion(make_config(tmp_path, scripted_brain.url), EventBus())
    await companion.start()
    source = WavSource(wav, realtime=False)
    session = VoiceSession(
        brain=CompanionBrain(companion), bus=companion.bus, source=source,
        sink=WavSink(lambda: source.position_s, rate=piper_voice.sample_rate),
        transcriber=hearing, synthesizer=piper_voice, voice=replace(VoiceSettings(listening="always"), muted=True),
    )
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    assert session.loop.heard == []
    assert scripted_brain.bodies == []
