"""Engine switches that can't be half-done: a server gone mid-request hands over to her own engine
in one step, whatever happens to the request that found it gone, and she checks the engine works."""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import replace

import numpy as np
import pytest
from audio_env import speech
from voice_pitch import word_error_rate

from companion.errors import Stage
from companion.events import ErrorOccurred, EventBus, Speak, turn_scope
from companion.voice.fallback import RemoteHearing, RemoteVoice
from companion.voice.remote.servers import dropped
from companion.voice.sound.audio import resample


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


URI = "tcp://192.0.2.7:10300"


class GoneHearingServer:
    """A hearing server that went away: every request fails as a real one's would."""

    uri = URI
    info = None

    def __init__(self) -> None:
        self.requests = 0

    async def transcribe(self, audio: np.ndarray) -> str:
        self.requests += 1
        await asyncio.sleep(0)  # a request is a few awaits on a socket before it fails
        raise dropped(self.uri, Stage.HEARING, "broke off mid-answer (IncompleteReadError)")


class GoneVoiceServer:
    uri = URI
    info = None
    sample_rate = 22_050
    speed = 1.0
    synth_count = 0

    async def synthesize(self, text: str) -> np.ndarray:
        self.synth_count += 1
        await asyncio.sleep(0)
        raise dropped(self.uri, Stage.SPEAKING, "broke off mid-answer (IncompleteReadError)")


class GatedLoader:
    """Loads her own engine only once the test lets it: the window in which the user speaks again."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.entered = threading.Event()
        self.go = threading.Event()
        self.calls = 0

    def __call__(self):
        self.calls += 1
        self.entered.set()
        if not self.go.wait(60):
            raise TimeoutError("the test never let the load finish")
        return self.engine


def _events(bus: EventBus) -> tuple[list[ErrorOccurred], list[Speak]]:
    errors: list[ErrorOccurred] = []
    said: list[Speak] = []
    bus.subscribe(lambda e: errors.append(e) if isinstance(e, ErrorOccurred) else None)
    bus.subscribe(lambda e: said.append(e) if isinstance(e, Speak) else None)
    return errors, said


async def test_a_request_cancelled_in_the_middle_of_the_switch_to_her_own_whisper_leaves_her_hearing(
        hearing, piper_voice):
    bus = EventBus()
    errors, said = _events(bus)
    loader = GatedLoader(hearing)
    ears = RemoteHearing(GoneHearingServer(), loader, bus)
    with turn_scope(3):  # the early decode of the user's pause, for turn 3
        early = asyncio.create_task(ears.transcribe(speech(piper_voice, "I would like to")))
    await asyncio.to_thread(loader.entered.wait, 30)
    early.cancel()  # the user spoke again: the early decode is not wanted any more
    with pytest.raises(asyncio.CancelledError):
        await early
    loader.go.set()
    heard = await ears.transcribe(speech(piper_voice, "I would like to book a table for two."))
    assert words(heard) == "i would like to book a table for two"
    assert ears.local is hearing and ears.failed is not None and not ears.using_remote
    assert len(errors) == 1 and errors[0].sentence.endswith("I'm using my own hearing on this computer until you fix it.")
    assert [(s.text, s.turn) for s in said] == [
        ("My hearing server on 192.0.2.7 isn't answering, so I'm using my own hearing on this computer.", 0)]
    assert words(await ears.transcribe(speech(piper_voice, "What time is it?"))) == "what time is it"
    assert loader.calls == 1 and ears.remote.requests == 1


async def test_a_sentence_cancelled_in_the_middle_of_the_switch_to_her_own_piper_leaves_her_a_voice(
        hearing, piper_voice):
    bus = EventBus()
    errors, said = _events(bus)
    loader = GatedLoader(piper_voice)
    mouth = RemoteVoice(GoneVoiceServer(), loader, bus)
    with turn_scope(5):
        sentence = asyncio.create_task(mouth.synthesize("The first sentence of her answer."))
    await asyncio.to_thread(loader.entered.wait, 30)
    sentence.cancel()  # barge-in: the rest of her answer is dropped
    with pytest.raises(asyncio.CancelledError):
        await sentence
    loader.go.set()
    audio = await mouth.synthesize("The moon is far away.")
    assert words(hearing.transcribe_sync(resample(audio, mouth.sample_rate, 16_000))) == "the moon is far away"
    assert mouth.local is piper_voice and len(errors) == 1
    assert [(s.text.startswith("My voice server on 192.0.2.7 isn't answering"), s.turn) for s in said] == [(True, 0)]


async def test_requests_that_find_the_server_gone_together_make_one_switch_and_one_notice(hearing, piper_voice):
    bus = EventBus()
    errors, said = _events(bus)
    loader = GatedLoader(hearing)
    ears = RemoteHearing(GoneHearingServer(), loader, bus)
    questions = ["What time is it?", "How far away is the moon?", "Thank you, that was helpful."]
    waiting = [asyncio.create_task(ears.transcribe(speech(piper_voice, q))) for q in questions]
    await asyncio.to_thread(loader.entered.wait, 30)
    waiting[1].cancel()
    loader.go.set()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert isinstance(results[1], asyncio.CancelledError)
    assert [words(results[0]), words(results[2])] == ["what time is it", "thank you that was helpful"]
    assert loader.calls == 1 and len(errors) == 1 and len(said) == 1


class DeafWhisper:
    """A local engine that loads but hears nothing (a broken model file that still opens)."""

    async def transcribe(self, audio: np.ndarray) -> str:
        return ""


async def test_her_own_engine_failing_its_test_after_the_switch_is_said_not_used_silently(piper_voice):
    bus = EventBus()
    errors, said = _events(bus)
    ears = RemoteHearing(GoneHearingServer(), lambda: DeafWhisper(), bus)
    assert await ears.transcribe(speech(piper_voice, "What time is it?")) == ""
    assert ears.local is None
    assert len(errors) == 1
    assert "Until then I can't hear you: type to me instead." in errors[0].sentence
    assert "My own hearing on this computer did not work either: My hearing heard nothing in a test word" \
        in errors[0].sentence
    assert [s.text for s in said] == [
        "My hearing server on 192.0.2.7 isn't answering, so I can't hear you. Please type to me."]


class MuteVoice:
    sample_rate = 22_050

    def __init__(self) -> None:
        self.speed = 1.0

    async def synthesize(self, text: str) -> np.ndarray:
        return np.zeros(self.sample_rate, dtype=np.float32)


async def test_her_own_voice_that_makes_no_sound_is_not_taken_and_the_banner_says_why():
    bus = EventBus()
    errors, said = _events(bus)
    mouth = RemoteVoice(GoneVoiceServer(), lambda: MuteVoice(), bus)
    assert (await mouth.synthesize("Hello there.")).size == 0
    assert mouth.local is None and said == []
    assert errors[0].sentence.endswith("did not work either: My voice made no sound for a test word.")


class KillingLink:
    """A loopback link in front of a real hearing server; once armed, the next request that
    reaches the server kills it there and then (its audio in the server's hands)."""

    def __init__(self, server) -> None:
        self.server = server
        self.armed = False
        self.killed_with: int | None = None
        """How many bytes of the request the server held when it was killed."""
        self._listener: asyncio.Server | None = None

    @property
    def uri(self) -> str:
        return f"tcp://127.0.0.1:{self._listener.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> KillingLink:
        self._listener = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_exc) -> None:
        self._listener.close()
        await self._listener.wait_closed()

    async def _serve(self, client_reader, client_writer) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.server.port)
        except OSError:  # the server is gone: so is the connection
            client_writer.close()
            return

        async def upstream() -> None:
            sent = 0
            while data := await client_reader.read(4096):
                server_writer.write(data)
                await server_writer.drain()
                sent += len(data)
                if self.armed and self.killed_with is None and sent > 16_000:  # half a second of audio
                    self.killed_with = sent
                    await asyncio.to_thread(self.server.kill)

        async def downstream() -> None:
            while data := await server_reader.read(4096):
                client_writer.write(data)
                await client_writer.drain()

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if not tasks[1].done():
            await asyncio.wait([tasks[1]])  # the client has sent all: the answer (or the end) comes back
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in (client_writer, server_writer):
            writer.close()


class WatchedPauses:
    """Between her ear and the loop: passes every pause on, and lets her own Whisper finish
    loading only once the user has gone on talking in the middle of the switch."""

    def __init__(self, loop, ears: RemoteHearing, loader: GatedLoader) -> None:
        self.loop, self.ears, self.loader = loop, ears, loader
        self.resumed_mid_switch = 0

    def pause_ready(self, pause_id: int, text: str) -> None:
        self.loop.pause_ready(pause_id, text)

    def resumed(self, pause_id: int) -> None:
        if self.ears.switching:
            self.resumed_mid_switch += 1  # the early decode waiting on the switch is cancelled now
            self.loader.go.set()
        self.loop.resumed(pause_id)

    def discarded(self, pause_id: int | None) -> None:
        self.loop.discarded(pause_id)


async def test_the_hearing_server_killed_with_her_question_and_a_thinking_pause_after_leave_her_hearing(
        tmp_path, pulse_audio, scripted_brain, hearing, piper_voice, turn_model):
    """The issue's conversation: the server dies holding the user's words; the user pauses to
    think (0.6 s) while her own Whisper loads and goes on talking, which cancels the early decode
    that is waiting for the switch. She must hear that sentence whole, and the next question."""
    from audio_env import speech_wav
    from brain_harness import make_config
    from wyoming_servers import hearing_server

    from companion.config import VoiceSettings
    from companion.events import TurnFinished, UserHeard
    from companion.runtime import Companion
    from companion.voice.brain_port import CompanionBrain
    from companion.voice.remote.hearing import WyomingTranscriber
    from companion.voice.session import VoiceSession
    from companion.voice.sound.devices import DeviceSink, DeviceSource

    for _ in range(8):  # replies prepared in pauses and thrown away take some too
        scripted_brain.push({"text": "All right."})
    first = speech_wav(tmp_path / "q1.wav", piper_voice, "What time is it?", tail_s=0.3)
    thinking = speech_wav(tmp_path / "q2a.wav", piper_voice, "I would like to", lead_s=0.3, tail_s=0.3)
    going_on = speech_wav(tmp_path / "q2b.wav", piper_voice, "book a table for two people tonight.",
                          lead_s=0.3, tail_s=0.3)
    last = speech_wav(tmp_path / "q3.wav", piper_voice, "How far away is the moon?", tail_s=0.3)
    bus = EventBus()
    errors, said = _events(bus)
    heard: asyncio.Queue[str] = asyncio.Queue()
    finished = asyncio.Event()
    bus.subscribe(lambda e: heard.put_nowait(e.text) if isinstance(e, UserHeard) else None)
    bus.subscribe(lambda e: finished.set() if isinstance(e, TurnFinished) else None)
    companion = Companion(make_config(tmp_path, scripted_brain.url), bus)
    await companion.start()
    loader = GatedLoader(hearing)
    with hearing_server(tmp_path / "server") as server:
        async with KillingLink(server) as link:
            ears = RemoteHearing(WyomingTranscriber(link.uri), loader, bus)
            await ears.start()
            assert ears.using_remote, errors
            session = VoiceSession(brain=CompanionBrain(companion), bus=bus, source=DeviceSource(),
                                   sink=DeviceSink(preferred_rate=piper_voice.sample_rate), transcriber=ears,
                                   synthesizer=piper_voice, voice=VoiceSettings(listening="always"), turn_model=turn_model)
            pauses = session.loop.ear.pauses = WatchedPauses(session.loop, ears, loader)
            running = asyncio.create_task(session.run())

            async def ask(wav) -> str:
                finished.clear()
                player = pulse_audio.play_into_mic(wav)
                text = await asyncio.wait_for(heard.get(), 60)
                await asyncio.to_thread(player.wait, 30)
                await asyncio.wait_for(finished.wait(), 60)
                await asyncio.wait_for(session.loop.wait_until_quiet(), 60)
                return text

            try:
                assert words(await ask(first)) == "what time is it"
                assert ears.using_remote and server.process.poll() is None
                link.armed = True
                finished.clear()
                player = pulse_audio.play_into_mic(thinking)
                await asyncio.to_thread(player.wait, 30)
                # The server died holding her words; her own Whisper is loading. The user goes on.
                assert await asyncio.to_thread(loader.entered.wait, 60), "the switch never began"
                player = pulse_audio.play_into_mic(going_on)
                sentence = await asyncio.wait_for(heard.get(), 60)
                await asyncio.to_thread(player.wait, 30)
                await asyncio.wait_for(finished.wait(), 60)
                await asyncio.wait_for(session.loop.wait_until_quiet(), 60)
                then = await ask(last)
            finally:
                await session.close()
                await running
                await companion.close()
    assert link.killed_with is not None and server.process is None
    assert pauses.resumed_mid_switch >= 1, "the user never spoke again during the switch"
    assert words(sentence) == "i would like to book a table for two people tonight"
    # Her own Whisper (tiny) through the room may mishear one word ("moon" as "man"); what matters is
    # that the question after the switch reaches her whole.
    asked, heard_then = ["how", "far", "away", "is", "the", "moon"], words(then).split()
    assert len(heard_then) == len(asked) and word_error_rate(asked, heard_then) <= 1 / 6, then
    assert ears.local is hearing and loader.calls == 1
    assert [e.stage for e in errors] == ["hearing"]
    assert errors[0].sentence.endswith("I'm using my own hearing on this computer until you fix it.")
    notices = [s for s in said if s.text.startswith("My hearing server")]
    assert [s.turn for s in notices] == [0]


async def _scheduled_callbacks_run() -> None:
    """Until every callback the loop had scheduled so far has run."""
    done = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(done.set_result, None)
    await done


async def test_her_hearing_notice_waits_while_the_user_speaks_and_is_said_once_all_is_quiet(hearing, piper_voice):
    bus = EventBus()
    errors, said = _events(bus)
    notice = asyncio.Event()
    bus.subscribe(lambda e: notice.set() if isinstance(e, Speak) else None)
    ears = RemoteHearing(GoneHearingServer(), lambda: hearing, bus)
    ears.set_busy(True)  # the voice loop: the user is in the middle of a question
    with turn_scope(2):
        heard = await ears.transcribe(speech(piper_voice, "How many legs"))
    assert words(heard) == "how many legs"
    assert len(errors) == 1 and said == []  # the banner at once; not a word over the user
    ears.set_busy(False)
    ears.set_busy(True)  # the user goes on before she has said it: it waits again
    await _scheduled_callbacks_run()
    assert said == []
    ears.set_busy(False)
    await asyncio.wait_for(notice.wait(), 10)
    ears.set_busy(True)
    ears.set_busy(False)
    await _scheduled_callbacks_run()
    assert [(s.text, s.turn) for s in said] == [
        ("My hearing server on 192.0.2.7 isn't answering, so I'm using my own hearing on this computer.", 0)]


class HeldPauseSource:
    """The user's WAV spoken in real time, who at `hold_at_s` (inside a pause) waits for `ready()`
    before going on; the stream heard is the file exactly, however long the wait."""

    def __init__(self, path, hold_at_s: float, ready) -> None:
        from companion.voice.sound.audio import WavSource

        self.wav = WavSource(path, realtime=True, tail_s=2.5)
        self.realtime = True
        self.hold_at_s, self.ready = hold_at_s, ready
        self.held = False

    @property
    def position_s(self) -> float:
        return self.wav.position_s

    async def read(self):
        if not self.held and self.wav.position_s >= self.hold_at_s:
            self.held = True
            waited = asyncio.get_running_loop().time()
            await self.ready()
            self.wav._start += asyncio.get_running_loop().time() - waited  # real time goes on from here
        return await self.wav.read()

    def close(self) -> None:
        self.wav.close()


@pytest.mark.real_audio  # the user speaks in real time, in process
@pytest.mark.parametrize("barge_in", [True, False], ids=["barge-in", "no-barge-in"])
async def test_the_hearing_server_killed_holding_half_a_question_leaves_her_the_whole_question(
        tmp_path, scripted_brain, hearing, piper_voice, turn_model, barge_in):
    """Issue 57: the server dies holding "How many legs" (the early transcript of the user's
    pause) and her own Whisper takes over before the user goes on: "does a spider have?" must be
    heard with it, as one question, asked once and answered once, and her notice about the switch
    must not talk over it (without barge-in she hears nothing while she speaks)."""
    from brain_harness import make_config
    from scripted_brain import user_texts
    from wyoming_servers import hearing_server

    from companion.config import VoiceSettings
    from companion.events import SpeakingChanged
    from companion.runtime import Companion
    from companion.voice.brain_port import CompanionBrain
    from companion.voice.remote.hearing import WyomingTranscriber
    from companion.voice.session import VoiceSession
    from companion.voice.sound.audio import WavSink, write_wav
    from companion.voice.turns.endpoint import EndpointSettings

    scripted_brain.fallback = {"text": "A spider has eight legs."}
    half = speech(piper_voice, "How many legs")  # with the lead silence
    question = speech(piper_voice, "How many legs", 0.8, "does a spider have?")
    wav = tmp_path / "question.wav"
    write_wav(wav, question, 16_000)
    bus = EventBus()
    errors, said = _events(bus)
    switched, speaking = asyncio.Event(), asyncio.Event()
    bus.subscribe(lambda e: switched.set() if isinstance(e, ErrorOccurred) else None)
    bus.subscribe(lambda e: speaking.set() if isinstance(e, SpeakingChanged) and e.speaking else None)
    companion = Companion(make_config(tmp_path, scripted_brain.url), bus)
    await companion.start()
    with hearing_server(tmp_path / "server") as server:
        async with KillingLink(server) as link:
            ears = RemoteHearing(WyomingTranscriber(link.uri), lambda: hearing, bus)
            await ears.start()
            assert ears.using_remote, errors
            link.armed = True

            async def switched_and_her_notice_settled() -> None:
                # The server died with the first half and her Whisper took over, in the pause.
                await switched.wait()
                if ears.notice is None:  # said at once: the user goes on over it
                    await speaking.wait()

            source = HeldPauseSource(wav, hold_at_s=half.size / 16_000 + 0.6, ready=switched_and_her_notice_settled)
            notice_at: list[float] = []
            bus.subscribe(lambda e: notice_at.append(source.position_s)
                          if isinstance(e, Speak) and e.text.startswith("My hearing server") else None)
            began = asyncio.get_running_loop().time()
            sink = WavSink(lambda: asyncio.get_running_loop().time() - began, rate=piper_voice.sample_rate,
                           realtime=True)
            session = VoiceSession(brain=CompanionBrain(companion), bus=bus, source=source, sink=sink,
                                   transcriber=ears, synthesizer=piper_voice, turn_model=turn_model,
                                   voice=VoiceSettings(listening="always", barge_in=barge_in))
            session.loop.calling.learning = None  # her names' samples would go to the server too
            ear = session.loop.ear
            # Only 1.5 s of silence ends this turn: the turn model's cut at a pause, and the words
            # going on after it, are the ear's own (tests/voice/turns); here the switch alone acts.
            ear.apply(replace(ear.settings, endpoint=EndpointSettings(end_silence_ms=1500, turn_check_ms=None)))
            try:
                await session.run()  # until the file ends and she is quiet
            finally:
                await session.close()
                await companion.close()
    assert link.killed_with is not None and source.held and ears.local is hearing
    whole = "how many legs does a spider have"
    asked = [user_texts(body)[-1] for body in scripted_brain.bodies]
    assert words(asked[-1]) == whole, (asked, session.loop.heard)
    assert [(m["role"], words(m["content"])) for m in companion.conversation.history] == [
        ("user", whole), ("assistant", "a spider has eight legs")]
    assert [e.stage for e in errors] == ["hearing"]
    notices = [s for s in said if s.text.startswith("My hearing server")]
    assert [s.turn for s in notices] == [0]
    assert notice_at[0] >= question.size / 16_000, "her notice talked over the question"
