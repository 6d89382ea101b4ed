"""Fault injection for a spoken conversation: name every await of a turn's path, then break one.

A conversation runs once with nothing broken while `FaultPoints` records the awaits it passes
(each request to the hearing server and the voice server, before it is sent and when its answer
is back; the same for her own engines once they stand in; each brain turn asked; each streamed
reply delta). Then it runs again per recorded point with one fault there: the server dies
(every request from then on fails as a dropped connection does) or the user cancels the turn
(Esc, "stop": `VoiceLoop.interrupt`). `check_conversation` then says what went wrong, if
anything: she heard every question, said the last answer, gave exactly the notices the fault
calls for (one per dead server, none for a cancel) and kept every question in her history.

The servers stand in for Wyoming servers in front of the real models (a real Wyoming server is
tested in test_voice_switching.py and test_faults_servers.py; here the point is the turn's
awaits, and a real server's start-up would cost seconds per case).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from audio_env import speech
from brain_harness import make_config
from replayed import replayed, replayed_hearing

from companion.config import VoiceSettings
from companion.errors import Stage
from companion.events import ErrorOccurred, EventBus, ReplyDelta, Speak, UserHeard
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.fallback import RemoteHearing, RemoteVoice
from companion.voice.remote.servers import dropped
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, WavSource, write_wav

KILL, CANCEL = "kill", "cancel"
HEARING_NOTICE = "My hearing server on {host} isn't answering"
VOICE_NOTICE = "My voice server on {host} isn't answering"


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


@dataclass
class Fault:
    point: str
    """A name recorded by FaultPoints (e.g. "hear#2<"), where the fault happens."""
    action: str
    """KILL (the server the point belongs to dies there) or CANCEL (the user stops the turn there)."""

    def __str__(self) -> str:
        return f"{self.action}@{self.point}"


@dataclass
class FaultPoints:
    """Counts the awaits a conversation passes, by name, and breaks the one a Fault names."""

    faults: list[Fault] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    hit: list[Fault] = field(default_factory=list)
    cancel: Callable[[], object] = lambda: None
    """What the user does to stop the turn (set once the session exists)."""
    actions: dict[str, Callable[[], object]] = field(default_factory=dict)
    """Other things done at a named point (the brain's server stopped, or started again)."""
    dead: set[str] = field(default_factory=set)
    """Servers killed so far ("hear", "say")."""
    _counts: dict[str, int] = field(default_factory=dict)

    def next_name(self, kind: str) -> int:
        self._counts[kind] = self._counts.get(kind, 0) + 1
        return self._counts[kind]

    def mark(self, name: str) -> None:
        """A point passed with no await of its own (a streamed delta): only a cancel applies."""
        self.passed.append(name)
        if name in self.actions:
            self.actions.pop(name)()
        for fault in self.faults:
            if fault.point == name and fault.action == CANCEL:
                self.hit.append(fault)
                self.cancel()

    async def at(self, name: str, server: str | None = None) -> None:
        """The await named `name`; raises the dropped connection when `server` is (now) dead."""
        self.passed.append(name)
        if name in self.actions:
            action = self.actions.pop(name)
            if asyncio.iscoroutinefunction(action):
                asyncio.get_running_loop().create_task(action())  # goes on beside the turn
            else:
                await asyncio.to_thread(action)
        for fault in self.faults:
            if fault.point != name:
                continue
            self.hit.append(fault)
            if fault.action == CANCEL:
                self.cancel()
            elif server is not None:
                self.dead.add(server)
        await asyncio.sleep(0)  # a real request is a few awaits on a socket: let a cancel land here
        if server is not None and server in self.dead:
            stage = Stage.HEARING if server == "hear" else Stage.SPEAKING
            raise dropped("tcp://192.0.2.7:10300", stage, "broke off mid-answer (injected)")


class _Server:
    uri = "tcp://192.0.2.7:10300"
    info = None

    def __init__(self, engine, points: FaultPoints, kind: str) -> None:
        self.engine, self.points, self.kind = engine, points, kind

    async def start(self) -> None:
        await self.points.at(f"{self.kind}:start", self.kind)


class HearingServer(_Server):
    """A hearing server in front of the real Whisper that dies when FaultPoints says so."""

    async def transcribe(self, audio: np.ndarray) -> str:
        n = self.points.next_name("hear")
        await self.points.at(f"hear#{n}>", "hear")
        text = await self.engine.transcribe(audio)
        await self.points.at(f"hear#{n}<", "hear")
        return text


class VoiceServer(_Server):
    """A voice server in front of the real piper that dies when FaultPoints says so."""

    def __init__(self, engine, points: FaultPoints, kind: str = "say") -> None:
        super().__init__(engine, points, kind)
        self.sample_rate = engine.sample_rate
        self.speed = 1.0
        self.synth_count = 0

    async def synthesize(self, text: str) -> np.ndarray:
        n = self.points.next_name("say")
        await self.points.at(f"say#{n}>", "say")
        audio = await self.engine.synthesize(text)
        self.synth_count += 1
        await self.points.at(f"say#{n}<", "say")
        return audio


class LocalEngine:
    """Her own engine standing in, with its awaits named too (the switch's self-test is one)."""

    def __init__(self, engine, points: FaultPoints, kind: str) -> None:
        self.engine, self.points, self.kind = engine, points, kind
        self.sample_rate = getattr(engine, "sample_rate", 16_000)
        self.speed = 1.0

    async def transcribe(self, audio: np.ndarray) -> str:
        n = self.points.next_name(self.kind)
        await self.points.at(f"{self.kind}#{n}>")
        text = await self.engine.transcribe(audio)
        await self.points.at(f"{self.kind}#{n}<")
        return text

    async def synthesize(self, text: str) -> np.ndarray:
        n = self.points.next_name(self.kind)
        await self.points.at(f"{self.kind}#{n}>")
        audio = await self.engine.synthesize(text)
        await self.points.at(f"{self.kind}#{n}<")
        return audio


class CountedBrain(CompanionBrain):
    """The real runtime's brain port, with each turn's ask named."""

    def __init__(self, companion: Companion, points: FaultPoints) -> None:
        super().__init__(companion)
        self.points = points

    async def ask(self, text: str) -> None:
        n = self.points.next_name("ask")
        await self.points.at(f"ask#{n}>")
        await super().ask(text)
        await self.points.at(f"ask#{n}<")

    async def ask_prepared(self, prepared) -> None:
        n = self.points.next_name("ask")
        await self.points.at(f"ask#{n}>")
        await super().ask_prepared(prepared)
        await self.points.at(f"ask#{n}<")


QUESTIONS = ("What is the capital of France?", "How far away is the moon?")
ANSWERS = ("Paris is the capital of France. It sits on the Seine.",
           "The moon is about three hundred eighty thousand kilometres away.")


def conversation_wav(path: Path, piper_voice) -> Path:
    """The user's two questions, with room for her answer between them (the file source takes turns)."""
    gap = np.zeros(int(1.2 * 16_000), dtype=np.float32)
    audio = np.concatenate([speech(piper_voice, QUESTIONS[0]), gap, speech(piper_voice, QUESTIONS[1])])
    write_wav(path, audio, 16_000)
    return path


NOT_ASKED: dict = {"not asked": True}
"""A first reply nobody takes (the brain's server is down for the first question)."""


@dataclass
class Outcome:
    heard: list[str]
    played: list[str]
    errors: list[ErrorOccurred]
    said: list[Speak]
    user_history: list[str]
    passed: list[str]
    hit: list[Fault]
    answered_at: int | None = None
    """How many points were passed when her last answer began to play (None: it never did)."""
    unswitched: set[str] = field(default_factory=set)
    """Servers ("hear", "say") whose engine never finished a switch: none began, or her voice
    closed in the middle of it (then nothing of it is shown or said)."""


async def run_conversation(tmp_path: Path, brain_server, hearing, piper_voice, wav: Path,
                           points: FaultPoints, *, first_reply: dict | None = None,
                           brain: dict | None = None, ears=None, mouth=None, replay_hearing: bool = False) -> Outcome:
    """The two-question conversation through the real runtime, models and brain over HTTP,
    with `points` breaking what it names. The file is read as fast as she takes turns.
    `replay_hearing`: Whisper's words for an utterance heard before in this process are given
    again at once (replayed.ReplayedHearing; for the sweeps, which hear the same two questions
    dozens of times).
    `first_reply`: what the brain answers the first question (default: the answer, streamed)."""
    if first_reply != NOT_ASKED:
        brain_server.push(first_reply or {"text": ANSWERS[0], "chunks": 3})
    brain_server.push({"text": ANSWERS[1], "chunks": 3})
    for _ in range(6):  # replies prepared in a pause and dropped take their own requests
        brain_server.push({"text": ANSWERS[1], "chunks": 3})
    bus = EventBus()
    errors: list[ErrorOccurred] = []
    said: list[Speak] = []
    bus.subscribe(lambda e: errors.append(e) if isinstance(e, ErrorOccurred) else None)
    bus.subscribe(lambda e: said.append(e) if isinstance(e, Speak) else None)
    deltas = iter(range(1, 10_000))
    bus.subscribe(lambda e: points.mark(f"delta#{next(deltas)}") if isinstance(e, ReplyDelta) else None)
    questions = iter(range(1, 100))
    bus.subscribe(lambda e: points.mark(f"heard#{next(questions)}") if isinstance(e, UserHeard) else None)
    companion = Companion(make_config(tmp_path, brain_server.url, brain=brain or {}), bus)
    await companion.start()
    # `ears` and `mouth`, when given, build engines on the bus (real Wyoming servers, say).
    heard = replayed_hearing(hearing) if replay_hearing else hearing
    ears = ears(bus) if ears else RemoteHearing(
        HearingServer(heard, points, "hear"), lambda: LocalEngine(heard, points, "own-hear"), bus)
    voice = replayed(piper_voice)
    mouth = mouth(bus) if mouth else RemoteVoice(
        VoiceServer(voice, points), lambda: LocalEngine(voice, points, "own-say"), bus)
    for engine in (ears, mouth):
        if hasattr(engine, "start"):
            await engine.start()
    source = WavSource(wav, realtime=False)
    sink = WavSink(lambda: source.position_s, rate=piper_voice.sample_rate)
    session = VoiceSession(brain=CountedBrain(companion, points), bus=bus, source=source, sink=sink,
                           transcriber=ears, synthesizer=mouth, voice=VoiceSettings(listening="always"))
    points.cancel = lambda: session.loop.interrupt("stop")
    played: list[str] = []
    answered_at: list[int] = []
    hook = session.speaker.on_playing

    def playing(line) -> None:
        played.append(line.text)
        if not answered_at and words(ANSWERS[1]) in words(" ".join(played)):
            answered_at.append(len(points.passed))
        if hook:
            hook(line)

    session.speaker.on_playing = playing
    try:
        await asyncio.wait_for(session.run(), 120)
    finally:
        await session.close()
        await companion.close()
    history = [m["content"] for m in companion.conversation.history if m["role"] == "user"]
    unswitched = {kind for kind, engine in (("hear", ears), ("say", mouth)) if getattr(engine, "failed", 0) is None}
    return Outcome(session.loop.heard, played, errors, said, history, points.passed, points.hit,
                   answered_at[0] if answered_at else None, unswitched)


def check_conversation(outcome: Outcome, fault: Fault | None, *, brain_error: str | None = None,
                       host: str = "192.0.2.7") -> list[str]:
    """What went wrong in a conversation with `fault` (nothing: []); `brain_error`: the code
    of the one brain error the first turn must end with, said aloud once."""
    problems = []
    brain_errors = [e for e in outcome.errors if e.stage == "brain"]
    if [e.code for e in brain_errors] != ([brain_error] if brain_error else []):
        problems.append(f"brain errors {[(e.code, e.sentence) for e in brain_errors]!r}, expected {brain_error!r}")
    for error in brain_errors:
        if sum(error.sentence in p for p in outcome.played) != 1:
            problems.append(f"the brain's sentence {error.sentence!r} was not played once: {outcome.played!r}")
    outcome.errors = [e for e in outcome.errors if e.stage != "brain"]
    heard = [words(t) for t in outcome.heard]
    if heard != [words(q) for q in QUESTIONS]:
        problems.append(f"heard {outcome.heard!r}")
    kept = [words(t) for t in outcome.user_history]
    if not all(words(q) in kept for q in QUESTIONS):
        problems.append(f"history lost a question: {outcome.user_history!r}")
    last_answer = words(ANSWERS[1])
    # Whole, in order; a server dying mid-sentence may put its notice between the part its voice
    # said and the rest in hers (where the sentence breaks depends on the machine's pace).
    answered = [p for p in outcome.played if not p.startswith(("My hearing server", "My voice server"))]
    if last_answer not in words(" ".join(answered)):
        problems.append(f"did not say the last answer: played {outcome.played!r}")
    dead = {f.point.split("#")[0].split(":")[0] for f in outcome.hit if f.action == KILL}
    # A server dying after her last answer began to play, in a background request (a narration
    # line made in the quiet) as the file ends and her voice closes: the switch it began ends
    # with her voice, unsaid and unshown. Only there may a dead server cost no notice.
    late = {f.point.split("#")[0].split(":")[0] for f in outcome.hit if f.action == KILL
            and outcome.answered_at is not None and f.point in outcome.passed[outcome.answered_at:]}
    dead -= late & outcome.unswitched
    expected = sorted(n.format(host=host) for kind, n in (("hear", HEARING_NOTICE), ("say", VOICE_NOTICE))
                      if kind in dead)
    notices = sorted(s.text.split(",")[0] for s in outcome.said if s.text.startswith(("My hearing server",
                                                                                      "My voice server")))
    if notices != expected:
        problems.append(f"notices said {notices!r}, expected {expected!r}")
    for notice in expected:
        if not any(p.startswith(notice) for p in outcome.played):
            problems.append(f"the notice {notice!r} was never played")
    if len(outcome.errors) != len(expected):
        problems.append(f"errors {[e.sentence for e in outcome.errors]!r}")
    return problems


def first_turn(passed: list[str]) -> list[str]:
    """The points up to the second question: a cancel there stops the first turn, not the last answer."""
    return passed[:passed.index("heard#2")] if "heard#2" in passed else list(passed)


def faults_to_try(passed: list[str]) -> list[Fault]:
    """Every server point killed, every await of the first turn cancelled.

    The last points are syntheses made in the quiet after her last answer (narration lines) as
    the file ends and her voice closes: a switch begun there ends with her voice, unsaid and
    with no banner (check_conversation expects no notice there, and no error after she closed)."""
    kills = [Fault(p, KILL) for p in passed if re.match(r"(hear|say)(#|:)", p)]
    cancels = [Fault(p, CANCEL) for p in first_turn(passed) if not p.endswith(":start")]
    return kills + cancels


SWITCH_AWAITS = 5
"""The kill's own await, her own engine's self-test (its first request and answer) and its first
answer in the turn (or the brain's first await after the switch): in a voice switch the three after
those were her own engine saying the next sentences, in a hearing switch its answer and the brain's
turn, which the cancel sweep already covers; each costs a whole conversation."""


def cancels_around_a_switch(passed: list[str], kill: Fault) -> list[list[Fault]]:
    """`kill`, then a cancel at each await of the first turn from the kill on: before the
    switch (the request that found the server gone), during it (her own engine's self-test)
    and after it (her own engine answering). `SWITCH_AWAITS` of them: later ones are her own
    engine at work again, already covered."""
    turn = first_turn(passed)
    after = turn[turn.index(kill.point):][:SWITCH_AWAITS] if kill.point in turn else []
    return [[kill, Fault(p, CANCEL)] for p in after]
