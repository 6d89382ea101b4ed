"""The engines a fault sweep plays again: piper's audio for a line, Whisper's words for an
utterance, each made once per process and handed out again after that.

A sweep runs the same conversation dozens of times; what it tests is where each await breaks,
which the fault servers in front of these name whatever the audio or the words cost."""

from __future__ import annotations

import asyncio

import numpy as np


class ReplayedVoice:
    """piper's own audio for each line, made once per process and played again after that.

    A sweep plays the same few lines (two answers, her thinking line) in dozens of conversations;
    synthesizing them each time was a third of the sweeps' processor, and what they test is
    where each await breaks, which the servers in front of this name whatever the audio cost.

    A line whose await was cancelled (her thinking line, not needed once the answer came) is
    still finished on piper's thread, as it always was; its audio is kept too, but replayed only
    after as long as it took then: ready at once, her thinking line took another path in every
    later conversation (2c9c3d3), while made afresh it cost piper 26 of ~30 runs of the sweep."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.sample_rate = engine.sample_rate
        self._made: dict[str, tuple[np.ndarray, float]] = {}
        """Each line's audio and how long to take to give it again (0: a turn of the loop)."""

    async def synthesize(self, text: str) -> np.ndarray:
        if text in self._made:
            audio, took_s = self._made[text]
            await asyncio.sleep(took_s)  # at least a turn of the loop, as waiting for piper's thread gives
            return audio
        loop = asyncio.get_running_loop()
        started = loop.time()
        making = asyncio.ensure_future(self.engine.synthesize(text))
        try:
            audio = await asyncio.shield(making)
        except asyncio.CancelledError:
            making.add_done_callback(lambda task: self._keep(text, task, loop.time() - started))
            raise
        self._made[text] = (audio, 0.0)
        return audio

    def _keep(self, text: str, task: asyncio.Future, took_s: float) -> None:
        if not task.cancelled() and task.exception() is None:
            self._made.setdefault(text, (task.result(), took_s))


class ReplayedHearing:
    """Whisper's own words for each utterance, heard once per process and given again after that.

    Whisper (int8, beam search, one thread) writes the same words for the same samples, and a
    sweep hears the same two questions cut the same way in dozens of conversations; audio it has
    not heard before (cut elsewhere, or the names it is told changed) goes to Whisper. As with
    ReplayedVoice, the servers in front of this name each await whatever the words cost."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self._heard: dict[tuple, str] = {}

    async def transcribe(self, audio: np.ndarray) -> str:
        audio = np.asarray(audio, dtype=np.float32)
        key = (audio.tobytes(), tuple(getattr(self.engine, "call_names", ())))
        if key not in self._heard:
            self._heard[key] = await self.engine.transcribe(audio)
        else:
            await asyncio.sleep(0)  # a turn of the loop, as waiting for Whisper's thread gives
        return self._heard[key]


_REPLAYED: dict[tuple[int, type], ReplayedVoice | ReplayedHearing] = {}


def _replayed(engine, kind):
    made = _REPLAYED.get((id(engine), kind))
    if made is None or made.engine is not engine:
        made = _REPLAYED[(id(engine), kind)] = kind(engine)
    return made


def replayed(engine) -> ReplayedVoice:
    """The one ReplayedVoice of `engine` in this process."""
    return _replayed(engine, ReplayedVoice)


def replayed_hearing(engine) -> ReplayedHearing:
    """The one ReplayedHearing of `engine` in this process."""
    return _replayed(engine, ReplayedHearing)
