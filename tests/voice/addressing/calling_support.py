"""Shared by the When-called tests: test speech in espeak-ng and piper voices, WAV files of
a room, and one voice session over a file on the real runtime and the scripted brain."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
from audio_env import spoken
from brain_harness import PLAIN_PERSONALITY, make_config

from companion.config import VoiceSettings
from companion.events import EventBus
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, WavSource, read_wav, resample, write_wav

CALLED = VoiceSettings(listening="called")


def espeak(text: str, voice: str, folder: Path, speed: int = 150) -> np.ndarray:
    path = folder / "espeak.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text], check=True, timeout=30)
    audio, rate = read_wav(path)
    return resample(audio, rate, 16_000)


def said(piper_voice, text: str) -> np.ndarray:
    return spoken(piper_voice, text)  # made once per process (audio_env.spoken), read-only


def conversation(path: Path, *parts: np.ndarray | float) -> Path:
    """Audio pieces with seconds of silence between (numbers), written as a 16 kHz WAV."""
    pieces = [np.zeros(8_000, dtype=np.float32)]
    for part in parts:
        pieces.append(np.zeros(int(part * 16_000), dtype=np.float32) if isinstance(part, float) else part)
    write_wav(path, np.concatenate(pieces), 16_000)
    return path


def personality(folder: Path, name: str = "Mira", aliases: str = "[Mimi]") -> Path:
    path = folder / "her.md"
    path.write_text(PLAIN_PERSONALITY.format(patterns="").replace("name: Testa", f"name: {name}\naliases: {aliases}"))
    return path


async def started(tmp_path: Path, brain, chosen: Path | None = None, registry=None) -> Companion:
    companion = Companion(make_config(tmp_path, brain.url, personality=chosen or personality(tmp_path)), EventBus(),
                          **({"registry": registry} if registry is not None else {}))
    await companion.start()
    return companion


def session_over(companion: Companion, wav: Path, piper_voice, hearing, voice: VoiceSettings = CALLED) -> VoiceSession:
    source = WavSource(wav, realtime=False)
    sink = WavSink(lambda: source.position_s, rate=piper_voice.sample_rate)
    return VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                        transcriber=hearing, synthesizer=piper_voice, voice=voice)


async def run_over(companion: Companion, wav: Path, piper_voice, hearing, voice: VoiceSettings = CALLED) -> VoiceSession:
    """One voice session over `wav`, to its end (the companion stays up)."""
    session = session_over(companion, wav, piper_voice, hearing, voice)
    try:
        await session.run()
    finally:
        await session.close()
    return session


def user_lines(companion: Companion) -> list[str]:
    return [m["content"] for m in companion.conversation.history if m["role"] == "user"]
