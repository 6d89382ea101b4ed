"""Never a silent wait: a slow spoken answer follows one short thinking line from her personality."""

from __future__ import annotations

import asyncio
import re
import threading
import time

import numpy as np
from audio_env import speech
from brain_harness import make_config, write_personality
from brain_pace import Pace
from scripted_brain import ScriptedBrain

from companion.config import VoiceSettings
from companion.events import EventBus
from companion.runtime import Companion
from companion.tools.context import Channel
from companion.tools.registry import Registry
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, WavSource, resample, write_wav

THINKING = "Just a second, let me think."


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


async def start_companion(tmp_path, brain) -> Companion:
    personality = write_personality(tmp_path / "personality.md")
    with personality.open("a", encoding="utf-8") as f:
        f.write(f"## Thinking lines\nthinking: {THINKING}\n")
    companion = Companion(make_config(tmp_path, brain.url, personality=personality), EventBus(), registry=Registry())
    await companion.start()
    return companion


def session_on(companion, wav, hearing, piper_voice, *, after_s: float, realtime_voice: bool = False):
    """A session reading `wav` as fast as it can; with `realtime_voice` her voice plays at its
    own pace (so an answer can arrive while her thinking line is still playing)."""
    source = WavSource(wav, realtime=False)
    started = time.monotonic()
    clock = (lambda: time.monotonic() - started) if realtime_voice else (lambda: source.position_s)
    sink = WavSink(clock, rate=piper_voice.sample_rate, realtime=realtime_voice)
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice,
                           voice=VoiceSettings(listening="always", thinking_line_s=after_s))
    return session, sink


def questions_wav(path, piper_voice, *questions: str):
    write_wav(path, np.concatenate([speech(piper_voice, q, tail_s=1.0) for q in questions]), 16_000)
    return path


async def test_a_slow_spoken_answer_follows_her_thinking_line_once_whole_and_right_after_it(
    tmp_path, scripted_brain, hearing, piper_voice
):
    answer_may_come = threading.Event()  # the brain answers once her thinking line has begun
    scripted_brain.push({"text": "[happy] Paris is the capital of France.", "after": answer_may_come},
                        {"text": "I am fine."})
    wav = questions_wav(tmp_path / "q.wav", piper_voice, "What is the capital of France?", "How are you today?")
    companion = await start_companion(tmp_path, scripted_brain)
    session, sink = session_on(companion, wav, hearing, piper_voice, after_s=2.0, realtime_voice=True)
    sink.add_start_listener(lambda _when: answer_may_come.set())
    ready: dict[str, float] = {}  # each line's text → when its audio was ready
    session.loop.mouth.on_synthesized.append(lambda line: ready.setdefault(line.text, time.monotonic()))
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    assert session.loop.heard == ["What is the capital of France?", "How are you today?"]
    # Said once: the second answer came in time and needed none.
    assert session.loop.thinking.said == [THINKING]
    thinking, answer, second = list(session.speaker.recent_played)
    assert words(thinking.text) == words(THINKING) and words(answer.text).startswith("paris")
    # No overlap; an answer ready while the line played came straight after its end.
    assert thinking.ended <= answer.started
    if ready["Paris is the capital of France."] < thinking.ended:
        assert answer.started < thinking.ended + 0.25
    said = words(hearing.transcribe_sync(resample(sink.audio(), sink.rate, 16_000)))
    # All of it was heard, in order, nothing cut (Whisper may spell a word its own way).
    parts = ("let me think", "capital of france", "fine")
    assert all(part in said for part in parts), said
    assert [said.index(part) for part in parts] == sorted(said.index(part) for part in parts), said
    # Her thinking line is no part of her reply in the history.
    replies = [m["content"] for m in companion.conversation.history if m["role"] == "assistant"]
    assert replies == ["[happy] Paris is the capital of France.", "I am fine."]


async def test_a_typed_turn_never_gets_the_thinking_line_and_a_spoken_one_does(
    tmp_path, scripted_brain, hearing, piper_voice
):
    scripted_brain.push({"text": "Typed answer.", "delay": 0.8}, {"text": "Spoken answer.", "delay": 0.8})
    wav = questions_wav(tmp_path / "q.wav", piper_voice, "What is the capital of France?")
    companion = await start_companion(tmp_path, scripted_brain)
    session, _sink = session_on(companion, wav, hearing, piper_voice, after_s=0.3)
    try:
        await companion.ask("What is the capital of Spain?", Channel.TEXT)
        await session.speaker.idle.wait()
        assert session.loop.thinking.said == []
        await session.run()
    finally:
        await session.close()
        await companion.close()
    assert session.loop.thinking.said == [THINKING]
    assert [words(line.text) for line in session.speaker.recent_played] == [
        "typed answer", words(THINKING), "spoken answer"]


async def test_esc_during_her_thinking_line_stops_it_and_the_next_question_is_answered(
    tmp_path, scripted_brain, hearing, piper_voice
):
    never = threading.Event()
    scripted_brain.push({"text": "Too late.", "after": never}, {"text": "I am fine."})
    wav = questions_wav(tmp_path / "q.wav", piper_voice, "What is the capital of France?", "How are you today?")
    companion = await start_companion(tmp_path, scripted_brain)
    session, sink = session_on(companion, wav, hearing, piper_voice, after_s=0.3, realtime_voice=True)
    loop = asyncio.get_running_loop()
    pressed: list[bool] = []

    def esc(_when: float) -> None:
        if not pressed:  # Esc, the moment her thinking line begins
            pressed.append(True)
            loop.call_soon(lambda: pressed.append(session.loop.interrupt("Esc")))

    sink.add_start_listener(esc)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    assert pressed == [True, True] and session.loop.thinking.said == [THINKING]
    assert session.loop.heard == ["What is the capital of France?", "How are you today?"]
    said = words(hearing.transcribe_sync(resample(sink.audio(), sink.rate, 16_000)))
    assert said.endswith("i am fine") and "let me think" not in said
    assert [m["content"] for m in companion.conversation.history if m["role"] == "assistant"][-1] == "I am fine."


async def test_while_her_brain_is_still_waking_her_slow_answer_says_so(tmp_path, hearing, piper_voice):
    # A cold server: her start-up warm-up holds its one slot while the model loads (4.5 s: hearing
    # the question ends well before, even on a busy machine).
    with ScriptedBrain([{"text": "Paris."}], pace=Pace(prompt_tps=100_000, write_tps=1_000, load_s=4.5)) as brain:
        companion = await start_companion(tmp_path, brain)
        wav = questions_wav(tmp_path / "q.wav", piper_voice, "What is the capital of France?")
        session, _sink = session_on(companion, wav, hearing, piper_voice, after_s=0.5)
        try:
            await session.run()
        finally:
            await session.close()
            await companion.close()
    assert session.loop.thinking.said == ["Give me a moment, I'm waking up."]
    assert [words(line.text) for line in session.speaker.recent_played] == ["give me a moment im waking up", "paris"]
