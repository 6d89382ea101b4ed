"""The ear keeps reading frames while the words of an utterance that ended are still being heard."""

from __future__ import annotations

import asyncio
from collections import deque

import numpy as np

from companion.voice.sound.frames import FRAME_SAMPLES
from companion.voice.turns.ear import Ear
from companion.voice.turns.ear_settings import EarSettings
from companion.voice.turns.endpoint import EndpointSettings

SPEECH, QUIET = 20, 30
"""Frames of a question, then of silence (more than the 500 ms that end it)."""


class LiveSource:
    """Frames as a microphone gives them; `all_read` is set once the last one was taken."""

    realtime = True

    def __init__(self, frames: int) -> None:
        self.left = frames
        self.all_read = asyncio.Event()

    async def read(self) -> np.ndarray | None:
        await asyncio.sleep(0)  # a microphone's frames come one event-loop turn apart
        if self.left == 0:
            self.all_read.set()
            return None
        self.left -= 1
        return np.zeros(FRAME_SAMPLES, np.float32)

    def close(self) -> None:
        self.left = 0


class ScriptedVad:
    """Speech for the first SPEECH frames, silence after."""

    def __init__(self) -> None:
        self.frames = 0

    def probability(self, _frame: np.ndarray) -> float:
        self.frames += 1
        return 0.9 if self.frames <= SPEECH else 0.05

    def reset(self) -> None:
        self.frames = 0


class SlowHearing:
    """Answers only once the microphone has been read to the end (or, if the ear stopped
    reading, after a guard so the test fails instead of hanging)."""

    def __init__(self, source: LiveSource) -> None:
        self.source = source

    async def transcribe(self, _audio: np.ndarray) -> str:
        try:
            await asyncio.wait_for(self.source.all_read.wait(), 10)
        except TimeoutError:
            return "the ear stopped reading"
        return "What time is it?"


class Quiet:
    playing = False
    recent_played: deque = deque()
    busy = False


async def test_the_ear_reads_on_while_an_ended_utterance_is_still_being_transcribed():
    source = LiveSource(SPEECH + QUIET + 40)
    heard: list[str] = []

    async def on_heard(utterance) -> None:
        heard.append(utterance.text)

    ear = Ear(source=source, vad=ScriptedVad(), transcriber=SlowHearing(source), her_voice=Quiet(),
              heard=on_heard, barged_in=lambda: None,
              settings=EarSettings(endpoint=EndpointSettings(end_silence_ms=500)))
    await ear.run()
    assert heard == ["What time is it?"]
    assert not ear.hearing_words
