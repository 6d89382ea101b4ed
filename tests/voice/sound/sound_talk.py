"""A spoken conversation on the private PulseAudio's devices, opened as the app opens them, for
the tests that break the sound server or its devices under her (test_faults_sound_*.py)."""

from __future__ import annotations

import asyncio
import re
import signal
import time
from collections.abc import Callable

from audio_env import speech_wav, wait_until_recorded
from brain_harness import make_config

from companion.config import VoiceSettings
from companion.events import ErrorOccurred, EventBus, Speak, SpeakingChanged, TurnFinished
from companion.runtime import Companion
from companion.tools.context import Channel
from companion.voice.brain_port import CompanionBrain
from companion.voice.factory import open_devices
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import read_wav, resample
from companion.voice.sound.devices import DeviceSink, DeviceSource
from companion.voice.sound.watch import LOST_CODE

FIRST_QUESTION = "What is the capital of France?"
LONG_ANSWER = ("Paris is the capital of France. It sits on the river Seine in the north of the country. "
               "It has been the capital for more than a thousand years. Millions of people visit it every year.")
NEXT_QUESTION = "When does the library open?"
NEXT_ANSWER = "The library opens early in the morning."
BACK = "The sound system is back: I can hear you again."


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


class Seen:
    """Every event on the bus, and a wait for the first moment a condition on them holds."""

    def __init__(self, bus: EventBus) -> None:
        self.events: list = []
        self._changed = asyncio.Event()
        bus.subscribe(self._on)

    def _on(self, event) -> None:
        self.events.append(event)
        self._changed.set()

    def of(self, kind: type, test: Callable = lambda _e: True) -> list:
        return [e for e in self.events if isinstance(e, kind) and test(e)]

    async def until(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        async def wait() -> None:
            while not condition():
                self._changed.clear()
                await self._changed.wait()
        try:
            await asyncio.wait_for(wait(), timeout_s)
        except TimeoutError:
            raise AssertionError(f"waited {timeout_s} s for {what}; saw {self.events[-12:]!r}") from None

    def lost(self) -> list[ErrorOccurred]:
        return self.of(ErrorOccurred, lambda e: e.code == LOST_CODE)

    def back(self) -> list[Speak]:
        return self.of(Speak, lambda e: e.text == BACK)


class Talk:
    """Her voice on the private PulseAudio's devices, opened as the app opens them."""

    def __init__(self, tmp_path, pulse, brain, hearing, piper_voice, backend: str, *, output_device: str = "") -> None:
        self.tmp_path, self.pulse, self.brain, self.backend = tmp_path, pulse, brain, backend
        self.output_device = output_device
        self.hearing, self.piper_voice = hearing, piper_voice
        self.bus = EventBus()
        self.seen = Seen(self.bus)
        self._asked: asyncio.Task | None = None

    async def __aenter__(self) -> Talk:
        self.companion = Companion(make_config(self.tmp_path, self.brain.url), self.bus)
        await self.companion.start()
        voice = VoiceSettings(listening="always", sound_backend=self.backend, output_device=self.output_device)
        source, sink, notices, echo = await open_devices(voice, sample_rate=self.piper_voice.sample_rate)
        assert notices == [] and isinstance(source, DeviceSource) and isinstance(sink, DeviceSink) and echo
        assert source.backend == sink.backend == self.backend
        self.session = VoiceSession(brain=CompanionBrain(self.companion), bus=self.bus, source=source, sink=sink,
                                    transcriber=self.hearing, synthesizer=self.piper_voice, voice=voice, echo=echo)
        self.running = asyncio.create_task(self.session.run())
        await self.microphone_running()  # the user speaks once she listens, as in the app
        return self

    async def __aexit__(self, *_exc) -> None:
        await self.session.close()
        await asyncio.wait_for(self.running, 30)
        if self._asked is not None:
            await asyncio.wait_for(self._asked, 30)
        await self.companion.close()

    def say(self, text: str, name: str):
        """The user says `text` into the microphone (returns the player process)."""
        return self.pulse.play_into_mic(speech_wav(self.tmp_path / f"{name}.wav", self.piper_voice, text,
                                                   tail_s=0.3))

    async def microphone_running(self, frames: int = 15) -> None:
        """Until her ear has had half a second of frames from the microphone (a quiet room
        emits no event of its own; a new input stream delivers nothing for its first ~1.5 s)."""
        heard = asyncio.Event()
        count = iter(range(1, 10**6))
        self.session.loop.ear.hearers.append(lambda _frame, _at: heard.set() if next(count) >= frames else None)
        await asyncio.wait_for(heard.wait(), 30)

    async def answering_aloud(self, question: str) -> None:
        """The user asks `question` (typed: how her reply comes to be playing is not the point,
        and a spoken one split by a busy machine would make two turns) until her answer plays."""
        asked = asyncio.create_task(self.companion.ask(question, Channel.TEXT))
        await self.seen.until(lambda: self.seen.of(SpeakingChanged, lambda e: e.speaking), 60, "her answer playing")
        self._asked = asked

    def turns_finished(self) -> int:
        return len(self.seen.of(TurnFinished))

    async def kill_the_sound_server(self) -> None:
        killed = time.monotonic()
        await asyncio.to_thread(self.pulse.kill)
        await self.seen.until(lambda: self.seen.lost(), 10, "the notice that the sound system is lost")
        print(f"\nkilled → notice: {(time.monotonic() - killed) * 1000:.0f} ms")

    async def bring_it_back(self) -> None:
        started = time.monotonic()
        await asyncio.to_thread(self.pulse.start)
        await self.seen.until(lambda: self.seen.back(), 60, "the notice that she can hear again")
        print(f"started again → 'back': {time.monotonic() - started:.1f} s "
              f"after {len(self.session.sound.attempts)} attempt(s)")
        await self.session.loop.wait_until_quiet()  # the user waits for her to finish saying so

    async def ask_aloud_and_record(self, question: str, answer: str, *, speaker: str = "speaker") -> str:
        """The user asks once she is back; returns what `speaker` played, transcribed."""
        self.brain.push({"text": answer})
        before = self.turns_finished()
        recording = self.tmp_path / "after.wav"
        recorder = self.pulse.record_speaker(recording, device=f"{speaker}.monitor")
        started = time.monotonic()
        player = self.say(question, "next")
        try:
            await self.seen.until(lambda: self.turns_finished() > before, 60, "her answer to the next question")
            await self.session.loop.wait_until_quiet()
            # Everything she played is in the recorder's file once it covers up to now (+ buffers).
            await asyncio.to_thread(wait_until_recorded, recording, time.monotonic() - started + 0.5)
        finally:
            recorder.send_signal(signal.SIGINT)
            recorder.wait(10)
            player.wait(10)
        said, rate = read_wav(recording)
        return words(self.hearing.transcribe_sync(resample(said, rate, 16_000)))
