"""The sound server itself killed (SIGKILL of a private PulseAudio) in a spoken conversation,
on both of her sound paths (straight to the server, and through PortAudio).

Real PulseAudio, real Whisper and piper, the real runtime with a scripted brain over HTTP, her
devices opened as the app opens them (with the echo canceller). Whenever the server dies, she
says so once, in text; typed turns keep working; once it is back she hears the next question
and answers it aloud (recorded from the speaker). Each test has a PulseAudio of its own: killing
the session's would take the other real-audio tests with it.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from audio_env import sound_server, speech_wav
from sound_talk import BACK, FIRST_QUESTION, LONG_ANSWER, NEXT_ANSWER, NEXT_QUESTION, Talk, words
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.events import ReplyDone, Speak, SpeakingChanged, UserHeard
from companion.tools.context import Channel
from companion.voice.sound.watch import BACKOFF_S, LOST_CODE, STALL_S, lost_sentence

pytestmark = [pytest.mark.real_audio, pytest.mark.timeout(240)]


@pytest.fixture
def own_pulse(tmp_path):
    with sound_server(tmp_path / "pulse") as pulse:
        yield pulse


async def test_the_sound_server_killed_while_she_speaks_ends_the_turn_says_so_once_and_she_answers_aloud_once_it_is_back(
        tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend):
    scripted_brain.push({"text": LONG_ANSWER, "chunks": 6})
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend) as talk:
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
        when, tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend):
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend) as talk:
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
        tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend):
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend) as talk:
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
        tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend):
    """A hung server ends no stream: its callbacks just stop coming, and closing its streams
    blocks until it answers. The watch notices the silence, and reconnects once it goes on."""
    scripted_brain.push({"text": LONG_ANSWER, "chunks": 6})
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend) as talk:
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
        tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend):
    """A hiccup (a busy machine, an underrun) leaves a gap of up to ~2 s in the callbacks while
    PulseAudio recovers: she must not drop her devices or say a word about it."""
    scripted_brain.push({"text": LONG_ANSWER, "chunks": 6})
    async with Talk(tmp_path, own_pulse, scripted_brain, hearing, piper_voice, sound_backend) as talk:
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
