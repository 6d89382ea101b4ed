"""The voice loop end to end with the real models, the real runtime and a scripted brain over HTTP."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import replace

import numpy as np
import pytest
from audio_env import speech
from brain_harness import make_config, tool

from companion.config import VoiceSettings
from companion.events import EventBus, StateChanged
from companion.persona.thinking_lines import ThinkingLines
from companion.runtime import Companion
from companion.tools.registry import Registry
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, WavSource, resample, write_wav
from companion.voice.sound.frames import FRAME_S, FRAME_SAMPLES


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


async def start_companion(tmp_path, brain, *tools) -> Companion:
    registry = Registry()
    for spec in tools:
        registry.register(spec)
    companion = Companion(make_config(tmp_path, brain.url), EventBus(), registry=registry)
    await companion.start()
    return companion


def session_for(companion, wav, hearing, piper_voice, *, realtime: bool, voice: VoiceSettings | None = None):
    source = WavSource(wav, realtime=realtime)
    started = time.monotonic()
    clock = (lambda: time.monotonic() - started) if realtime else (lambda: source.position_s)
    sink = WavSink(clock, rate=piper_voice.sample_rate, realtime=realtime)
    session = VoiceSession(
        brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
        transcriber=hearing, synthesizer=piper_voice, voice=voice or VoiceSettings(listening="always"),
    )
    return session, sink


def assistant_replies(companion) -> list[str]:
    return [m["content"] for m in companion.conversation.history if m["role"] == "assistant" and m.get("content")]


async def test_a_spoken_question_gets_a_spoken_answer(tmp_path, scripted_brain, hearing, piper_voice):
    scripted_brain.push({"text": "[happy] Paris is the capital of France."})
    wav = tmp_path / "q.wav"
    write_wav(wav, speech(piper_voice, "What is the capital of France?"), 16_000)
    companion = await start_companion(tmp_path, scripted_brain)
    session, sink = session_for(companion, wav, hearing, piper_voice, realtime=False)
    busy: list[bool] = []
    session.loop.on_busy.append(busy.append)
    try:
        await session.run()
        # Background results waited while she listened and answered, and may come now.
        assert busy == [True, False] and companion.is_quiet()
    finally:
        await session.close()
        await companion.close()
    assert session.loop.heard == ["What is the capital of France?"]
    said = hearing.transcribe_sync(resample(sink.audio(), sink.rate, 16_000))
    assert words(said) == "paris is the capital of france"
    [latency] = session.loop.latencies
    assert all(v is not None for v in latency.stages_ms().values())


async def test_a_narration_line_plays_from_the_cache_without_synthesis(tmp_path, scripted_brain, hearing, piper_voice):
    clock = tool("read_clock", announce="Let me look at the clock.", complete="Got the time.",
                 heartbeat=("Still reading the clock.",))
    scripted_brain.push({"tool_calls": [{"name": "read_clock", "arguments": {}}]}, {"text": "It is noon."})
    wav = tmp_path / "q.wav"
    write_wav(wav, speech(piper_voice, "What time is it?"), 16_000)
    companion = await start_companion(tmp_path, scripted_brain, clock)
    session, sink = session_for(companion, wav, hearing, piper_voice, realtime=False)
    session.refresh_narration()
    await session.cache.ready.wait()
    # The tool's four lines and her thinking lines (the defaults: this personality has none).
    assert len(session.cache) == 4 + len(ThinkingLines().all())
    # How her name is heard is learned once (her voice says it too), before she listens to a file.
    await session.loop.calling.learning.wait(session.loop.calling.names(), 60)
    before = piper_voice.synth_count
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    assert session.speaker.stats.from_cache == 2  # the announce and complete lines
    assert piper_voice.synth_count - before == 1  # only "It is noon." was synthesized
    said = words(hearing.transcribe_sync(resample(sink.audio(), sink.rate, 16_000)))
    assert said.startswith("let me look at the clock") and said.endswith("it is noon")


STORY = ("Once upon a time there was a small red fox. The fox lived in a deep green forest beside a "
         "wide river. Every morning it ran down to the water to drink and to watch the fish. One day "
         "it met a very old turtle who knew the secrets of the whole valley. The turtle told it many stories.")


class CuedMicrophone:
    """A microphone in real time: the user's `first` words, silence until `cue` is set, then
    `then`. The user waits for her to start talking, however long that takes on a busy
    machine, before talking over her; a fixed gap in one WAV (5.5 s) sometimes ran out before
    her first word under load, and the "stop" became a question of its own (no barge-in)."""

    realtime = True

    def __init__(self, first: np.ndarray, then: np.ndarray, cue: asyncio.Event, *, tail_s: float = 1.5) -> None:
        self._first, self._cue = first, cue
        self._then = np.concatenate([then, np.zeros(int(tail_s * 16_000), dtype=np.float32)])
        self._cued_at: int | None = None
        """The frame at which `then` began."""
        self._index = 0
        self._start: float | None = None
        self._closed = False

    async def read(self) -> np.ndarray | None:
        if self._closed:
            return None
        if self._start is None:
            self._start = time.monotonic()
        delay = self._start + (self._index + 1) * FRAME_S - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)  # the pace of speech, not a wait for anything
        at = self._index * FRAME_SAMPLES
        self._index += 1
        if at < self._first.size:
            return _frame(self._first, at)
        if self._cued_at is None:
            if not self._cue.is_set():
                return np.zeros(FRAME_SAMPLES, dtype=np.float32)
            self._cued_at = self._index - 1
        at = (self._index - 1 - self._cued_at) * FRAME_SAMPLES
        return _frame(self._then, at) if at < self._then.size else None

    def close(self) -> None:
        self._closed = True


def _frame(audio: np.ndarray, at: int) -> np.ndarray:
    frame = audio[at:at + FRAME_SAMPLES]
    return np.pad(frame, (0, FRAME_SAMPLES - frame.size)) if frame.size < FRAME_SAMPLES else frame


def barge_in_wav(tmp_path, piper_voice, loud: float = 1.0):
    question = speech(piper_voice, "Tell me a story.", tail_s=5.5)
    interruption = speech(piper_voice, "Stop, that is enough.", lead_s=0.0, tail_s=0.5) * loud
    wav = tmp_path / "barge.wav"
    write_wav(wav, np.concatenate([question, interruption]), 16_000)
    return wav


@pytest.mark.real_audio  # talks over her in real time: run under a busy core in CI
async def test_talking_over_her_stops_playback_and_the_history_keeps_only_what_was_played(
    tmp_path, scripted_brain, hearing, piper_voice
):
    scripted_brain.push({"text": STORY}, {"text": "Okay."})
    companion = await start_companion(tmp_path, scripted_brain)
    her_first_word = asyncio.Event()
    # The user a little louder than her playback, as a voice near the microphone is, talks
    # over her 3.5 s after her first word (through her first sentence).
    microphone = CuedMicrophone(speech(piper_voice, "Tell me a story.", tail_s=0.3),
                                speech(piper_voice, "Stop, that is enough.", lead_s=3.5, tail_s=0.5) * 1.5,
                                her_first_word)
    started = time.monotonic()
    sink = WavSink(lambda: time.monotonic() - started, rate=piper_voice.sample_rate, realtime=True)
    sink.add_start_listener(lambda _when: her_first_word.set())
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=microphone, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice, voice=VoiceSettings(listening="always"))
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    assert session.loop.barge_ins == 1, (session.loop.heard, assistant_replies(companion))
    assert words(session.loop.heard[1]) == "stop that is enough"
    first_reply = assistant_replies(companion)[0]
    assert first_reply and STORY.startswith(first_reply) and len(first_reply) < len(STORY)
    # The history holds whole sentences she finished saying, nothing she never got to.
    assert first_reply.endswith(".")
    spoken = words(hearing.transcribe_sync(resample(sink.audio(), sink.rate, 16_000)))
    assert "turtle" not in spoken


async def test_with_barge_in_off_she_finishes_and_ignores_talk_over_her(tmp_path, scripted_brain, hearing, piper_voice):
    reply = ("The fox lived in a deep green forest beside a wide river, far from any town. "
             "Every morning it ran down to the water to drink and to watch the fish.")
    scripted_brain.push({"text": reply}, {"text": "Okay."})
    companion = await start_companion(tmp_path, scripted_brain)
    voice = replace(VoiceSettings(listening="always"), barge_in=False)
    session, _ = session_for(companion, barge_in_wav(tmp_path, piper_voice), hearing, piper_voice,
                             realtime=True, voice=voice)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    assert session.loop.barge_ins == 0
    assert assistant_replies(companion) == [reply]
    assert session.loop.heard == ["Tell me a story."]


class EchoRoom:
    """A microphone in a room with her loudspeaker: each frame captured at time t also holds,
    quieter, what the speaker played at t (the sink's timeline and the file start together).
    When the loop falls behind, frames are read late, but their echo is still that of their
    own moment, as with a real microphone."""

    realtime = True

    def __init__(self, source, sink, gain: float) -> None:
        self.source, self.sink, self.gain = source, sink, gain
        self._captured = 0  # 16 kHz samples delivered so far

    async def read(self):
        frame = await self.source.read()
        if frame is None:
            return None
        start, self._captured = self._captured, self._captured + frame.size
        played = self.sink.audio()
        begin, end = (int(n * self.sink.rate / 16_000) for n in (start, self._captured))
        echo = resample(played[begin:end], self.sink.rate, 16_000)[:frame.size]
        mixed = frame.copy()
        mixed[:echo.size] += echo * self.gain
        return mixed

    def close(self) -> None:
        self.source.close()


async def test_her_own_voice_coming_back_through_the_microphone_is_dropped_as_echo(
    tmp_path, scripted_brain, hearing, piper_voice
):
    reply = "The weather today is sunny and warm."
    scripted_brain.push({"text": reply})
    wav = tmp_path / "question.wav"
    write_wav(wav, speech(piper_voice, "How is the weather?", tail_s=8.0), 16_000)
    companion = await start_companion(tmp_path, scripted_brain)
    started = time.monotonic()
    sink = WavSink(lambda: time.monotonic() - started, rate=piper_voice.sample_rate, realtime=True)
    room = EchoRoom(WavSource(wav, realtime=True), sink, gain=0.15)  # her voice, -16 dB, comes back
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=room, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice, voice=VoiceSettings(listening="always"))
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    assert session.loop.barge_ins == 0
    assert session.loop.heard == ["How is the weather?"]
    assert len(scripted_brain.bodies) == 1


async def test_the_state_follows_her_voice_not_just_the_brain(tmp_path, scripted_brain, hearing, piper_voice):
    scripted_brain.push({"text": "Paris is the capital of France. It is a lovely city."})
    wav = tmp_path / "q.wav"
    write_wav(wav, speech(piper_voice, "What is the capital of France?"), 16_000)
    companion = await start_companion(tmp_path, scripted_brain)
    states: list[str] = []
    companion.bus.subscribe(lambda e: states.append(e.state) if isinstance(e, StateChanged) else None)
    session, _ = session_for(companion, wav, hearing, piper_voice, realtime=False)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    # The brain's turn ends before she has said it: she shows thinking until her voice plays,
    # speaking until she is done (never "idle" in between), then listening until the file ends.
    assert states == ["listening", "thinking", "speaking", "listening", "idle"]
