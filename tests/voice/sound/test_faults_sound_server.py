"""The sound server itself killed (SIGKILL of a private PulseAudio) in a spoken conversation.

Real PulseAudio, real Whisper and piper, the real runtime with a scripted brain over HTTP, her
devices opened as the app opens them (with the echo canceller). Whenever the server dies, she
says so once, in text; typed turns keep working; once it is back she hears the next question
and answers it aloud (recorded from the speaker). Each test has a PulseAudio of its own: killing
the session's would take the other real-audio tests with it.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest
from audio_env import sound_server, speech_wav, wait_until_recorded
from brain_harness import make_config
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.config import VoiceSettings
from companion.events import (
    ErrorOccurred,
    EventBus,
    ReplyDone,
    Speak,
    SpeakingChanged,
    TurnFinished,
    UserHeard,
)
from companion.runtime import Companion
from companion.tools.context import Channel
from companion.voice.brain_port import CompanionBrain
from companion.voice.factory import open_devices
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import read_wav, resample
from companion.voice.sound.devices import DeviceSink, DeviceSource
from companion.voice.sound.watch import BACKOFF_S, LOST_CODE, STALL_S, lost_sentence

pytestmark = [pytest.mark.real_audio, pytest.mark.timeout(240)]

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


@pytest.fixture
def own_pulse(tmp_path):
    with sound_server(tmp_path / "pulse") as pulse:
        yield pulse


class Talk:
    """Her voice on the private PulseAudio's devices, opened as the app opens them."""

    def __init__(self, tmp_path, pulse, brain, hearing, piper_voice) -> None:
        self.tmp_path, self.pulse, self.brain = tmp_path, pulse, brain
        self.hearing, self.piper_voice = hearing, piper_voice
        self.bus = EventBus()
        self.seen = Seen(self.bus)
        self._asked: asyncio.Task | None = None

    async def __aenter__(self) -> Talk:
        self.companion = Companion(make_config(self.tmp_path, self.brain.url), self.bus)
        await self.companion.start()
        voice = VoiceSettings(listening="always")
        source, sink, notices, echo = await open_devices(voice, sample_rate=self.piper_voice.sample_rate)
        assert notices == [] and isinstance(source, DeviceSource) and isinstance(sink, DeviceSink) and echo
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

    async def ask_aloud_and_record(self, question: str, answer: str) -> str:
        """The user asks once she is back; returns what the speaker played, transcribed."""
        self.brain.push({"text": answer})
        before = self.turns_finished()
        recording = self.tmp_path / "after.wav"
        recorder = self.pulse.record_speaker(recording)
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


async def test_the_sound_server_killed_while_she_speaks_ends_the_turn_says_so_once_and_she_answers_aloud_once_it_is_back(
        tmp_path, own_pulse, scripted_brain, hearing, piper_voice):
    scripted_brain.push({"text": LONG_ANSWER, "chunks": 6})
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice) as talk:
        await talk.answering_aloud(FIRST_QUESTION)
        await talk.kill_the_sound_server()
        # Her voice ends (the sentence playing and those queued end unplayed: nothing waits on a
        # speaker that is gone), and the reply stays as text.
        await asyncio.wait_for(talk.session.loop.wait_until_quiet(), 10)
        assert talk.seen.of(SpeakingChanged)[-1] == SpeakingChanged(False, turn=1, queued=False)
        assert talk.turns_finished() == 1
        assert words(LONG_ANSWER) in words(" ".join(e.text for e in talk.seen.of(ReplyDone)))
        assert not talk.session.sink.attached and not talk.session.source.attached
        await talk.bring_it_back()
        said = await talk.ask_aloud_and_record(NEXT_QUESTION, NEXT_ANSWER)
        assert talk.session.loop.heard == [NEXT_QUESTION]
        assert len(talk.seen.lost()) == 1 and len(talk.seen.back()) == 1
        assert talk.session.echo is not None and talk.session.echo.cancelling
    assert words(NEXT_ANSWER) in said, said


@pytest.mark.parametrize("when", ["while the user speaks", "while idle"])
async def test_the_sound_server_killed_while_the_user_speaks_or_all_is_quiet_is_said_once_and_the_next_question_is_answered_aloud(
        when, tmp_path, own_pulse, scripted_brain, hearing, piper_voice):
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice) as talk:
        if when == "while the user speaks":
            speaking = asyncio.Event()
            talk.session.loop.ear.hearers.append(
                lambda frame, _at: speaking.set() if talk.session.loop.ear.in_speech else None)
            player = talk.say("Could you tell me a long story about a small red fox and an old turtle?", "cut")
            await asyncio.wait_for(speaking.wait(), 30)
            await talk.kill_the_sound_server()
            player.wait(10)  # paplay ends with its server
        else:
            await talk.kill_the_sound_server()  # she is listening to a quiet room
        await talk.bring_it_back()
        said = await talk.ask_aloud_and_record(NEXT_QUESTION, NEXT_ANSWER)
        # The words cut off by the loss were no question: only the next one was heard.
        assert talk.session.loop.heard == [NEXT_QUESTION]
        assert len(talk.seen.lost()) == 1 and len(talk.seen.back()) == 1
    assert words(NEXT_ANSWER) in said, said


async def test_a_sound_server_that_never_comes_back_is_said_once_typing_still_works_and_reconnecting_backs_off(
        tmp_path, own_pulse, scripted_brain, hearing, piper_voice):
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice) as talk:
        await talk.kill_the_sound_server()
        watch = talk.session.sound
        tried = asyncio.Event()
        watch.on_attempt.append(lambda _worked: tried.set() if len(watch.attempts) >= 4 else None)
        # Typed turns go on meanwhile: the reply comes back as text, and nothing waits on a speaker.
        scripted_brain.push({"text": "Two plus two is four."})
        result = await asyncio.wait_for(talk.companion.ask("What is two plus two?", Channel.TEXT), 30)
        assert not result.interrupted and result.error is None
        assert "Two plus two is four." in [e.text for e in talk.seen.of(ReplyDone)]
        assert [e.text for e in talk.seen.of(UserHeard)] == ["What is two plus two?"]
        await asyncio.wait_for(tried.wait(), 60)
        gaps = np.diff(watch.attempts)
        # 1, 2, 4 … s apart: no busy loop (each a little later than asked, never sooner).
        assert all(gap >= wanted - 0.05 for gap, wanted in zip(gaps, BACKOFF_S[1:], strict=False)), gaps
        assert watch.lost and not talk.session.sink.attached and not talk.session.source.attached
    assert len(talk.seen.lost()) == 1 and talk.seen.back() == []
    [lost] = talk.seen.lost()
    assert lost.stage == "audio" and "Type to me meanwhile" in lost.sentence


async def test_a_sound_server_that_stalls_while_she_speaks_is_noticed_in_seconds_and_she_answers_aloud_once_it_goes_on(
        tmp_path, own_pulse, scripted_brain, hearing, piper_voice):
    """A hung server ends no stream: its callbacks just stop coming, and closing its streams
    blocks until it answers. The watch notices the silence, and reconnects once it goes on."""
    scripted_brain.push({"text": LONG_ANSWER, "chunks": 6})
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice) as talk:
        await talk.answering_aloud(FIRST_QUESTION)
        try:
            own_pulse.stall()
            stalled = time.monotonic()
            await talk.seen.until(lambda: talk.seen.lost(), 10, "the notice that the sound system is lost")
            noticed_s = time.monotonic() - stalled
            await asyncio.wait_for(talk.session.loop.wait_until_quiet(), 10)
        finally:
            own_pulse.resume()
        await talk.seen.until(lambda: talk.seen.back(), 60, "the notice that she can hear again")
        await talk.session.loop.wait_until_quiet()
        said = await talk.ask_aloud_and_record(NEXT_QUESTION, NEXT_ANSWER)
        assert talk.session.loop.heard == [NEXT_QUESTION]
        assert [e.sentence for e in talk.seen.lost()] == [lost_sentence("stopped answering")]
        assert len(talk.seen.back()) == 1
    print(f"\nstall noticed after {noticed_s:.2f} s")
    assert noticed_s < STALL_S + 2
    assert words(NEXT_ANSWER) in said, said


async def test_a_sound_server_that_pauses_for_half_a_second_is_no_loss_and_nothing_is_said(
        tmp_path, own_pulse, scripted_brain, hearing, piper_voice):
    """A hiccup (a busy machine, an underrun) leaves a gap of up to ~2 s in the callbacks while
    PulseAudio recovers: she must not drop her devices or say a word about it."""
    scripted_brain.push({"text": LONG_ANSWER, "chunks": 6})
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice) as talk:
        await talk.answering_aloud(FIRST_QUESTION)
        own_pulse.stall()
        await asyncio.sleep(0.5)  # the length of the hiccup, not a wait for anything
        own_pulse.resume()
        resumed = time.monotonic()
        # Frames flow again, for longer than a stall takes to be noticed.
        steady = asyncio.Event()
        talk.session.loop.ear.hearers.append(
            lambda _frame, _at: steady.set() if time.monotonic() - resumed > STALL_S + 1 else None)
        await asyncio.wait_for(steady.wait(), 30)
        await asyncio.wait_for(talk.session.loop.wait_until_quiet(), 60)
        assert talk.seen.lost() == [] and talk.session.sink.attached and talk.session.source.attached
        assert talk.session.sound.attempts == []


class Lines:
    """A process's stdout and stderr, line by line as they come, with a wait for a line."""

    def __init__(self, process) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        for stream in (process.stdout, process.stderr):
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, start: str, timeout_s: float = 90) -> str:
        with self._changed:
            found = self._changed.wait_for(lambda: next((x for x in self.lines if x.startswith(start)), None),
                                           timeout_s)
        assert found, f"no line starting {start!r} in {timeout_s} s: {self.lines[-20:]!r}"
        return found

    def count(self, start: str) -> int:
        return sum(line.startswith(start) for line in self.lines)


def test_companion_voice_says_in_the_terminal_that_the_sound_server_is_gone_answers_typing_and_says_when_it_is_back(
        tmp_path, own_pulse, scripted_brain):
    scripted_brain.push({"text": "Two plus two is four."})
    process = subprocess.Popen(
        [sys.executable, "-m", "companion.cli", "voice", "--config-dir", str(tmp_path / "config"),
         "--workspace", str(tmp_path / "ws"), "--brain-url", scripted_brain.url, "--model", "scripted"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=own_pulse.client_env())
    watchdog = threading.Timer(200, process.kill)  # a hang fails the test instead of the suite
    watchdog.start()
    try:
        out = Lines(process)
        out.wait_for("Listening")
        own_pulse.kill()
        lost = out.wait_for("[error] I lost the sound system")
        process.stdin.write("What is two plus two?\n")
        process.stdin.flush()
        out.wait_for("[say] Two plus two is four.")
        own_pulse.start()
        out.wait_for(f"[say] {BACK}")
    finally:
        watchdog.cancel()
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert lost == f"[error] {lost_sentence('stopped')}"
    assert out.count("[error] I lost the sound system") == 1 and out.count(f"[say] {BACK}") == 1
    assert not any("Traceback" in line for line in out.lines), out.lines


def test_the_window_shows_the_sound_server_gone_in_a_banner_keeps_answering_typing_and_hears_again_once_it_is_back(
        qtbot, qt_gc, tmp_path, own_pulse, scripted_brain, piper_voice, qt_loop):
    from ui_loop import signal_future

    from companion.config import Paths, RunConfig, Settings, with_overrides
    from companion.ui.app import CompanionApp

    scripted_brain.push({"text": "Two plus two is four."})
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")}, voice={"listening": "always"})
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings))
    qtbot.addWidget(app.window)
    app.show()
    errors: list[tuple[str, str, str]] = []
    app.bridge.error.connect(lambda *args: errors.append(args))

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        assert app.voice is not None and app.voice.listening, app.window.banners.shown_keys()
        lost = signal_future(app.bridge.error)
        await asyncio.to_thread(own_pulse.kill)
        await lost
        banner = app.window.banners.banner("audio")
        assert banner is not None and "I lost the sound system" in banner.text()
        finished = signal_future(app.bridge.turn_finished)
        app.send_text("What is two plus two?")
        await finished
        back = asyncio.Event()
        app.bus.subscribe(lambda event: back.set() if isinstance(event, Speak) and event.text == BACK else None)
        await asyncio.to_thread(own_pulse.start)
        await back.wait()
        await app.voice.loop.wait_until_quiet()  # she has said it, aloud, on the speaker that is back
        # The window meters the microphone through a wrapper: the device under it is heard again.
        scripted_brain.push({"text": NEXT_ANSWER})
        finished = signal_future(app.bridge.turn_finished)
        player = own_pulse.play_into_mic(speech_wav(tmp_path / "next.wav", piper_voice, NEXT_QUESTION, tail_s=0.3))
        await finished
        await asyncio.to_thread(player.wait)
        await app.close()

    try:
        qt_loop(scenario(), timeout=90)
    finally:
        qt_loop(app.close())
    assert [e for e in errors if e[0] == "audio"] == [("audio", LOST_CODE, lost_sentence("stopped"))]
    assert "audio" not in app.window.banners.shown_keys()  # gone once she hears again
    entries = app.window.captions.entries()
    assert ("said", "Two plus two is four.") in entries and ("said", BACK) in entries
    assert [text for kind, text in entries if kind == "heard"] == ["What is two plus two?", NEXT_QUESTION]
    assert ("said", NEXT_ANSWER) in entries
