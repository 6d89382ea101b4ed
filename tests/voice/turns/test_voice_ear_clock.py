"""The ear's clock: when each frame it hears was captured, so her own echo is recognised by
when it came back, also after the microphone was muted for a while."""

from __future__ import annotations

import asyncio
import types
from collections import deque
from dataclasses import replace

import numpy as np

from companion.voice.sound.frames import FRAME_S, FRAME_SAMPLES
from companion.voice.speaking.echo import PlayedLine
from companion.voice.turns.ear import Ear
from companion.voice.turns.ear_settings import EarSettings

HER_LINE = "The weather will be sunny all afternoon."


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class HerVoice:
    """She said HER_LINE, and has finished."""

    def __init__(self, played: PlayedLine) -> None:
        self.playing = False
        self.recent_played = deque([played])

    @property
    def busy(self) -> bool:
        return False


class MutedMicrophone:
    """Real time on a clock of its own: `levels` frames, the microphone muted for `muted` of them."""

    realtime = True

    def __init__(self, clock: Clock, levels: list[float], muted: range, ear_box: list[Ear]) -> None:
        self.clock, self.levels, self.muted, self.ear_box = clock, levels, muted, ear_box
        self.index = 0

    async def read(self):
        if self.index >= len(self.levels):
            return None
        ear = self.ear_box[0]
        ear.apply(replace(ear.settings, muted=self.index in self.muted))
        self.clock.now += FRAME_S
        level = self.levels[self.index]
        self.index += 1
        return np.full(FRAME_SAMPLES, level, dtype=np.float32)

    def close(self) -> None:
        self.levels = []


class LoudIsSpeech:
    def probability(self, frame) -> float:
        return 0.9 if abs(frame[0]) > 0.05 else 0.0

    def reset(self) -> None:
        pass


class HearsHer:
    async def transcribe(self, audio) -> str:
        return HER_LINE


async def test_her_echo_after_the_microphone_was_muted_is_still_known_as_hers(monkeypatch):
    clock = Clock()
    for module in ("ear", "words"):  # the ear's clock and the echo check's
        monkeypatch.setattr(f"companion.voice.turns.{module}.time", types.SimpleNamespace(monotonic=clock.monotonic))
    before, muted, after = 10, 100, 5
    # Her line plays from the 5th frame after the microphone is unmuted, for a second; its echo
    # comes back from 3 frames later, for 20 frames, then the room is quiet.
    started = clock.now + (before + muted + after) * FRAME_S
    played = PlayedLine(HER_LINE, started, started + 1.0)
    levels = [0.0] * (before + muted + after + 3) + [0.2] * 20 + [0.0] * 40
    heard: list[str] = []

    async def hear(utterance) -> None:
        heard.append(utterance.text)

    ear_box: list[Ear] = []
    microphone = MutedMicrophone(clock, levels, range(before, before + muted), ear_box)
    ear = Ear(source=microphone, vad=LoudIsSpeech(), transcriber=HearsHer(), her_voice=HerVoice(played),
              heard=hear, barged_in=lambda: None, settings=EarSettings())
    ear_box.append(ear)
    await asyncio.wait_for(ear.run(), 10)

    assert heard == []
