"""A spoken conversation in a room with open speakers (tests/helpers/open_speakers.Room), shared by the
open-speaker tests and bench/echo_cancellation.py.

She runs as `companion voice` does: the voice factory's devices (the room's speaker and
microphone, with her echo canceller unless switched off), real Whisper and piper, the scripted
brain over HTTP. The user speaks into the room; a three-channel witness records her voice and
the user's on one audio clock.
"""

from __future__ import annotations

import asyncio
import io
import signal
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from audio_env import speech_wav, wait_until_recorded
from brain_harness import make_config
from e2e_support import find_in_order, heard_parts, voiced_spans, words
from open_speakers import Room, read_witness

from companion.commands.listen import heard_printer
from companion.config import VoiceSettings
from companion.events import EventBus, TurnFinished
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.factory import open_devices
from companion.voice.session import VoiceSession

LONG_REPLY = (
    "Canberra is the capital of Australia. It was chosen as a compromise between Sydney and "
    "Melbourne, the two largest cities. The city was designed by two architects from Chicago, "
    "who won an international competition. Its centre is a large artificial lake named after "
    "Walter Burley Griffin. Parliament House sits on a hill and has grass growing on its roof. "
    "In spring the whole city celebrates with a flower festival called Floriade."
)
LAST_SENTENCE = "In spring the whole city celebrates with a flower festival called Floriade."
HER_WORDS = {"compromise", "sydney", "melbourne", "architects", "chicago", "parliament",
             "griffin", "festival", "floriade", "artificial"}
"""Words of her reply that the user never says: any of them in a [heard] line is her echo."""
QUESTION = "Tell me about Canberra."
INTERRUPTION = "Please stop talking now."


class StepMissed(TimeoutError):
    """A step of the conversation that never came (a TimeoutError that says which, and what happened)."""


@dataclass
class Round:
    """One exchange: the [heard] lines, barge-ins, the witness channels, the echo canceller's totals."""

    heard_lines: list[str]
    barge_ins: int
    hers: np.ndarray
    users: np.ndarray
    mic: np.ndarray
    echo_before: object | None = None
    echo_after: object | None = None

    def her_words_heard(self) -> list[str]:
        return [line for line in self.heard_lines if HER_WORDS & set(words(line))]


class OpenSpeakerTalk:
    """Her voice session in a Room; each ask() is one exchange recorded on the witness."""

    def __init__(self, folder: Path, pulse_audio, brain_url: str, piper_voice, hearing, *,
                 echo_db: int = -6, voice: VoiceSettings | None = None, her_voice=None) -> None:
        """`piper_voice` speaks the user's lines; she speaks with `her_voice` (piper_voice when None)."""
        self.folder = folder
        self.pulse = pulse_audio
        self.brain_url = brain_url
        self.synthesizer = piper_voice
        self.her_voice = her_voice or piper_voice
        self.transcriber = hearing
        self.voice = voice or VoiceSettings(listening="always")  # the user speaks without her name
        self.room = Room(pulse_audio, echo_db=echo_db)
        self.bus = EventBus()
        self._lines = io.StringIO()
        self.bus.subscribe(heard_printer(self._lines))
        self._finished: asyncio.Queue[TurnFinished] = asyncio.Queue()
        self.bus.subscribe(lambda e: self._finished.put_nowait(e) if isinstance(e, TurnFinished) else None)
        self._began = time.monotonic()
        self._trail: deque[str] = deque(maxlen=40)
        """The session's latest events, to say what happened when a step never comes."""
        self.bus.subscribe(self._note)
        self.rounds = 0

    def _note(self, event) -> None:
        self._trail.append(f"{time.monotonic() - self._began:6.2f} {event!r}"[:200])

    async def _within(self, awaitable, seconds: float, step: str):
        """`awaitable`, or a failure that says which step never came and what the session did."""
        try:
            return await asyncio.wait_for(awaitable, seconds)
        except TimeoutError:
            trail = "\n".join(self._trail)
            raise StepMissed(f"{step}: not within {seconds} s; heard {self.heard_lines()}, "
                                 f"{self.session.loop.barge_ins} barge-in(s); the last events:\n{trail}") from None

    async def __aenter__(self) -> OpenSpeakerTalk:
        self.room.start()
        self.companion = Companion(make_config(self.folder, self.brain_url), self.bus)
        await self.companion.start()
        self.session = await open_session(self.companion, self.bus, self.voice, self.her_voice,
                                          self.transcriber)
        self._running = asyncio.create_task(self.session.run())
        return self

    async def __aexit__(self, *_exc) -> None:
        try:
            await self.session.close()
            await self._running
        finally:
            try:
                await self.companion.close()
            finally:
                self.room.stop()

    def heard_lines(self) -> list[str]:
        """Every [heard] line of the session so far."""
        return [line.removeprefix("[heard] ") for line in self._lines.getvalue().splitlines()]

    async def ask(self, question: str = QUESTION, *, interrupt_after_s: float | None = None) -> Round:
        """The user asks; she answers (the brain's next scripted reply). With
        `interrupt_after_s`, the user says INTERRUPTION that long after her first sample."""
        self.rounds += 1
        name = f"round{self.rounds}"
        while not self._finished.empty():  # turns of an earlier exchange (her echo taken for a question)
            self._finished.get_nowait()
        asked = speech_wav(self.folder / f"{name}-question.wav", self.synthesizer, question, tail_s=0.3)
        lines_before = len(self._lines.getvalue().splitlines())
        barge_ins_before = self.session.loop.barge_ins
        echo = self.session.echo
        echo_before = echo.stats() if echo is not None else None
        witness = self.folder / f"{name}-witness.wav"
        recording_began = time.monotonic()
        recording = self.room.record(witness)
        players = []
        try:
            if interrupt_after_s is not None:
                first_sample = asyncio.get_running_loop().create_future()
                self.session.sink.add_start_listener(
                    lambda _when: first_sample.done() or first_sample.set_result(None))
                interruption = speech_wav(self.folder / f"{name}-stop.wav", self.synthesizer,
                                          INTERRUPTION, lead_s=interrupt_after_s)
            players.append(self.room.say(asked))
            if interrupt_after_s is not None:
                await self._within(first_sample, 30, "her first sound")
                players.append(self.room.say(interruption))  # its leading silence is the wait
                await self._within(self._finished.get(), 30, "the turn she was talked over in ending")
            await self._within(self._finished.get(), 60, "the last turn ending")
            await self._within(self.session.loop.wait_until_quiet(), 30, "her falling quiet")
            # Half a second of silence pushes the last of her words through PulseAudio's buffers,
            # and the witness is stopped only once it has written everything up to now.
            sink = self.session.sink
            await sink.play(np.zeros(sink.rate // 2, dtype=np.float32), sink.rate)
            await asyncio.to_thread(wait_until_recorded, witness, time.monotonic() - recording_began, channels=3)
        finally:
            recording.send_signal(signal.SIGINT)
            await asyncio.to_thread(recording.wait, 10)
            for player in players:
                await asyncio.to_thread(player.wait, 10)
        hers, users, mic = read_witness(witness)
        lines = self._lines.getvalue().splitlines()[lines_before:]
        return Round([line.removeprefix("[heard] ") for line in lines],
                     self.session.loop.barge_ins - barge_ins_before, hers, users, mic,
                     echo_before, echo.stats() if echo is not None else None)


async def talk(tmp_path: Path, pulse_audio, scripted_brain, piper_voice, hearing, *,
               voice: VoiceSettings | None = None, interrupt_after_s: float | None = None,
               echo_db: int = -6, her_voice=None) -> Round:
    """One exchange in a fresh session: QUESTION, answered with LONG_REPLY (in `her_voice`, piper's
    when None; the user always speaks with piper's)."""
    scripted_brain.push({"text": LONG_REPLY}, {"text": "Okay, I will stop."})
    async with OpenSpeakerTalk(tmp_path, pulse_audio, scripted_brain.url, piper_voice, hearing,
                               voice=voice, echo_db=echo_db, her_voice=her_voice) as conversation:
        return await conversation.ask(interrupt_after_s=interrupt_after_s)


async def open_session(companion, bus, voice: VoiceSettings, synthesizer, transcriber) -> VoiceSession:
    """Her voice on the room's devices, opened as the voice factory opens them for `companion voice`."""
    source, sink, notices, echo = await open_devices(voice, sample_rate=synthesizer.sample_rate)
    assert not notices, notices
    return VoiceSession(brain=CompanionBrain(companion), bus=bus, source=source, sink=sink,
                        transcriber=transcriber, synthesizer=synthesizer, voice=voice, echo=echo)


def she_finished(talk: Round, hearing, last_sentence: str = LAST_SENTENCE) -> list[str]:
    """What went wrong with her long reply (empty when she said it all and heard none of it)."""
    problems = []
    said = heard_parts(hearing, talk.hers)
    try:
        find_in_order(said, last_sentence)
    except AssertionError:
        problems.append(f"she did not finish: the speaker said {said!r}")
    if talk.barge_ins:
        problems.append(f"she interrupted herself {talk.barge_ins} time(s)")
    if echoes := talk.her_words_heard():
        problems.append(f"she heard her own words: {echoes}")
    return problems


def interruption_s(talk: Round) -> float:
    """How long the user's words over her lasted, on the witness recording."""
    _asked, interrupted = voiced_spans(talk.users)[:2]
    return interrupted[1] - interrupted[0]


def stop_latency_s(talk: Round) -> float:
    """From the user's first sound to her last sound before she answered, on the witness.
    Her answer begins only after the user has finished, so every sound of hers that began
    before then is the reply she was stopped in (one begun after the user started too: she may
    have been between sentences when the user began)."""
    asked, interrupted = voiced_spans(talk.users)[:2]
    reply = [span for span in voiced_spans(talk.hers) if span[0] < interrupted[1]]
    return reply[-1][1] - interrupted[0]
