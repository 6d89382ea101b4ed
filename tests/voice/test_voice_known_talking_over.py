"""Talking over her in real time with knowing voices on (When called): the caller's "stop" stops
her, a stranger's does not; the real loop, Whisper and encoder, an in-process microphone that
speaks at the pace of speech (no sound server)."""

from __future__ import annotations

import asyncio
import subprocess
import time

import numpy as np
import pytest
from audio_env import speech
from brain_harness import PLAIN_PERSONALITY, make_config
from test_voice_loop import STORY, CuedMicrophone, assistant_replies

from companion.config import VoiceSettings
from companion.events import EventBus, VoiceIgnored
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, read_wav, resample

KNOWING = VoiceSettings(listening="called", know_voices="yes")


def stranger(text: str, folder) -> np.ndarray:
    path = folder / "stranger.wav"
    subprocess.run(["espeak-ng", "-v", "en-us+f3", "-w", str(path), text], check=True, timeout=30)
    audio, rate = read_wav(path)
    return resample(audio, rate, 16_000)


async def talked_over(tmp_path, brain, hearing, piper_voice, interruption: np.ndarray):
    """Joe asks Mira for a story; 3 s into her answer `interruption` is said over her, louder
    than her. Returns (session, companion, the reasons of each voice ignored)."""
    brain.push({"text": STORY}, {"text": "Okay."})
    personality = tmp_path / "mira.md"
    personality.write_text(PLAIN_PERSONALITY.format(patterns="").replace("name: Testa", "name: Mira"))
    companion = Companion(make_config(tmp_path, brain.url, personality=personality), EventBus())
    ignored: list[str] = []  # the reasons of each VoiceIgnored (her log's and her face's)
    companion.bus.subscribe(lambda e: ignored.append(e.reason) if isinstance(e, VoiceIgnored) else None)
    await companion.start()
    her_first_word = asyncio.Event()
    microphone = CuedMicrophone(speech(piper_voice, "Mira, tell me a story about a fox.", tail_s=0.3),
                                np.concatenate([np.zeros(48_000, dtype=np.float32), interruption * 1.5]),
                                her_first_word)
    started = time.monotonic()
    sink = WavSink(lambda: time.monotonic() - started, rate=piper_voice.sample_rate, realtime=True)
    sink.add_start_listener(lambda _when: her_first_word.set())
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=microphone, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice, voice=KNOWING)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    return session, companion, ignored


@pytest.mark.real_audio  # talks over her in real time
async def test_a_strangers_stop_over_her_does_not_stop_her_when_called(tmp_path, scripted_brain, hearing, piper_voice):
    session, companion, ignored = await talked_over(tmp_path, scripted_brain, hearing, piper_voice,
                                           stranger("Stop, that is enough.", tmp_path))

    assert session.loop.barge_ins == 0 and session.loop.false_stops >= 1
    assert "other-voice" in [v.reason for v in session.loop.calling.verdicts]
    assert assistant_replies(companion)[0] == STORY  # she went on to the end
    assert ignored == ["stop-ignored"]  # the reason, in her log and on her face


@pytest.mark.real_audio  # talks over her in real time
async def test_the_callers_stop_over_her_stops_her(tmp_path, scripted_brain, hearing, piper_voice):
    """The test above bites: the same words in the caller's voice stop her."""
    session, companion, ignored = await talked_over(tmp_path, scripted_brain, hearing, piper_voice,
                                           speech(piper_voice, "Stop, that is enough.", lead_s=0.0))

    assert session.loop.barge_ins == 1, [v.reason for v in session.loop.calling.verdicts]
    assert len(assistant_replies(companion)[0]) < len(STORY)
    assert ignored == []
