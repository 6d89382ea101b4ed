"""Real audio devices: a private PulseAudio's virtual microphone and speaker, and no device at all."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
from audio_env import device_classes, reinitialise_sounddevice, speech_wav
from brain_harness import make_config

from companion.config import VoiceSettings
from companion.errors import CompanionError
from companion.events import EventBus, TurnFinished
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import read_wav, resample, write_wav
from companion.voice.sound.devices import DeviceSink, DeviceSource


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


@pytest.fixture
def no_sound_server():
    """A machine with no sound card and no sound server."""
    saved = os.environ.get("PULSE_SERVER")
    os.environ["PULSE_SERVER"] = "unix:/nonexistent/pulse/native"
    reinitialise_sounddevice()
    yield
    if saved is None:
        os.environ.pop("PULSE_SERVER", None)
    else:
        os.environ["PULSE_SERVER"] = saved
    reinitialise_sounddevice()


async def test_speech_into_the_virtual_microphone_is_heard_and_her_answer_is_recorded_from_the_speaker(
    tmp_path, pulse_audio, scripted_brain, hearing, piper_voice, sound_backend
):
    scripted_brain.push({"text": "The library opens early in the morning."})
    question = speech_wav(tmp_path / "q.wav", piper_voice, "What is the capital of Germany?", tail_s=0.5)
    bus = EventBus()
    finished = asyncio.Event()
    bus.subscribe(lambda event: finished.set() if isinstance(event, TurnFinished) else None)
    companion = Companion(make_config(tmp_path, scripted_brain.url), bus)
    await companion.start()
    microphone, speaker = device_classes(sound_backend)
    source, sink = microphone(), speaker(preferred_rate=piper_voice.sample_rate)
    levels: list[float] = []
    sink.add_level_listener(levels.append)
    session = VoiceSession(brain=CompanionBrain(companion), bus=bus, source=source, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice, voice=VoiceSettings(listening="always"))
    recording = pulse_audio.record_speaker(tmp_path / "said.wav")
    running = asyncio.create_task(session.run())
    player = pulse_audio.play_into_mic(question)
    try:
        await asyncio.wait_for(finished.wait(), 60)
        await asyncio.wait_for(session.loop.wait_until_quiet(), 60)
        # Half a second of silence pushes the last of her words through PulseAudio's buffers.
        await sink.play(np.zeros(sink.rate // 2, dtype=np.float32), sink.rate)
    finally:
        recording.send_signal(signal.SIGINT)
        recording.wait(10)
        player.wait(10)
        await session.close()
        await running
        await companion.close()
    assert session.loop.heard == ["What is the capital of Germany?"]
    assert max(levels) > 0.05  # the output stream's callbacks report her level (lip sync)
    said, rate = read_wav(tmp_path / "said.wav")
    assert words(hearing.transcribe_sync(resample(said, rate, 16_000))) == "the library opens early in the morning"


def test_with_no_sound_device_opening_the_microphone_or_speaker_says_so(no_sound_server):
    with pytest.raises(CompanionError) as mic:
        DeviceSource(loop=asyncio.new_event_loop())
    assert mic.value.sentence == "I can't find a microphone on this machine. I'll carry on in text: type to me instead."
    with pytest.raises(CompanionError) as speaker:
        DeviceSink(loop=asyncio.new_event_loop())
    assert "can't find a speaker" in speaker.value.sentence


def test_companion_voice_without_a_sound_device_says_so_and_carries_on_in_text(tmp_path, scripted_brain):
    scripted_brain.push({"text": "Paris is the capital of France."})
    env = {**os.environ, "PULSE_SERVER": "unix:/nonexistent/pulse/native"}
    done = subprocess.run(
        [sys.executable, "-m", "companion.cli", "voice", "--config-dir", str(tmp_path / "config"),
         "--workspace", str(tmp_path / "ws"), "--brain-url", scripted_brain.url, "--model", "scripted"],
        input="What is the capital of France?\n", capture_output=True, text=True, env=env, timeout=90,
    )
    assert done.returncode == 0, done.stderr
    assert "I can't find a microphone on this machine" in done.stderr
    assert "[say] Paris is the capital of France." in done.stdout


async def test_a_microphone_running_at_another_rate_is_resampled_to_16_khz(tmp_path, pulse_audio, sound_backend):
    tone = tmp_path / "tone.wav"
    t = np.arange(int(1.5 * 44_100)) / 44_100
    write_wav(tone, (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 44_100)
    source = device_classes(sound_backend)[0](rate=44_100)
    player = pulse_audio.play_into_mic(tone)
    frames = []
    try:
        while len(frames) < 60:  # ~1.9 s of 32 ms frames
            frame = await asyncio.wait_for(source.read(), 10)
            assert frame is not None and frame.shape == (512,)
            frames.append(frame)
    finally:
        source.close()
        player.wait(10)
    audio = np.concatenate(frames)
    loud = audio[np.abs(audio) > 0.1]
    assert loud.size > 16_000  # a second of the tone came through
    spectrum = np.abs(np.fft.rfft(audio))
    assert abs(np.argmax(spectrum) * 16_000 / audio.size - 440) < 10


def test_the_microphone_goes_on_when_qasync_steps_its_reader_after_the_loop_has_stopped(qapp, qtbot, pulse_audio):
    """qasync's run_until_complete processes Qt events once more after its loop has stopped, with
    no asyncio loop running (and Qt events between two runs do the same): a reader stepped then
    must still get its frames. On an asyncio.Queue it raised "Queue … is bound to a different
    event loop" and the window's hearing restarted."""
    import qasync

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    frames: list[np.ndarray] = []
    arrived = asyncio.Event()

    async def open_source() -> DeviceSource:
        return DeviceSource()

    async def listen(source: DeviceSource) -> None:
        while (frame := await source.read()) is not None:
            frames.append(frame)
            arrived.set()

    source = loop.run_until_complete(open_source())
    reader = loop.create_task(listen(source))
    try:
        loop.run_until_complete(asyncio.wait_for(arrived.wait(), 10))
        # The loop has stopped; Qt events go on (the microphone keeps delivering frames).
        before = len(frames)
        qtbot.waitUntil(lambda: len(frames) >= before + 5 or reader.done(), timeout=10_000)
        assert not reader.done(), reader.exception()
    finally:
        source.close()
        loop.run_until_complete(asyncio.wait_for(asyncio.gather(reader, return_exceptions=True), 10))
        loop.close()
        asyncio.set_event_loop(None)
