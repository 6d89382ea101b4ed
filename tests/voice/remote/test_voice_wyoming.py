"""Wyoming engines against real servers on loopback: wyoming-faster-whisper with the shipped tiny.en
and wyoming-piper with the shipped joe-medium voice; broken links and dead servers."""

from __future__ import annotations

import asyncio
import re
import time

import numpy as np
import pytest
from audio_env import speech
from flaky_link import FlakyLink, Silent
from wyoming_servers import hearing_server, voice_server

from companion.errors import Stage
from companion.events import ErrorOccurred, EventBus, Speak, turn_scope
from companion.voice.fallback import RemoteHearing, RemoteVoice
from companion.voice.remote.hearing import WyomingTranscriber
from companion.voice.remote.servers import ServerError
from companion.voice.remote.speaking import WyomingSynthesizer
from companion.voice.sound.audio import resample


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


async def test_the_hearing_server_describes_itself_and_transcribes_a_question(wyoming_hearing, piper_voice):
    transcriber = WyomingTranscriber(wyoming_hearing.uri)
    info = await transcriber.start()
    assert info.program.startswith("faster-whisper ")
    assert info.models and info.models[0].endswith("model")  # the shipped tiny.en folder
    assert "en" in info.languages
    assert info.round_trip_ms is not None and info.round_trip_ms > 0
    assert "faster-whisper" in info.summary() and "test round trip" in info.summary()
    text = await transcriber.transcribe(speech(piper_voice, "What is the capital of France?"))
    assert words(text) == "what is the capital of france"
    # A second utterance on the same transcriber: each request has its own connection.
    text = await transcriber.transcribe(speech(piper_voice, "Thank you, that was helpful."))
    assert words(text) == "thank you that was helpful"
    assert transcriber.requests == 2


async def test_silence_sent_to_the_hearing_server_is_heard_as_nothing(wyoming_hearing):
    transcriber = WyomingTranscriber(wyoming_hearing.uri)
    assert await transcriber.transcribe(np.zeros(16_000, dtype=np.float32)) == ""


async def test_the_voice_server_speaks_a_sentence_whisper_hears_word_for_word(wyoming_voice, hearing):
    synthesizer = WyomingSynthesizer(wyoming_voice.uri)
    info = await synthesizer.start()
    assert info.program.startswith("piper ")
    assert "en_US-joe-medium" in info.models
    assert synthesizer.sample_rate == 22_050
    audio = await synthesizer.synthesize("The library opens early in the morning.")
    assert audio.dtype == np.float32 and len(audio) > synthesizer.sample_rate
    heard = hearing.transcribe_sync(resample(audio, synthesizer.sample_rate, 16_000))
    assert words(heard) == "the library opens early in the morning"


async def test_a_voice_the_server_does_not_have_is_a_sentence_listing_what_it_has(wyoming_voice):
    with pytest.raises(ServerError) as caught:
        await WyomingSynthesizer(wyoming_voice.uri, voice="xx_XX-nobody-low").start()
    assert caught.value.code == "unknown_voice"
    assert f"My voice server at {wyoming_voice.uri} has no voice 'xx_XX-nobody-low'" in caught.value.sentence


async def test_an_unreachable_server_is_a_sentence_naming_it_and_what_to_do(unused_port):
    uri = f"tcp://127.0.0.1:{unused_port}"
    with pytest.raises(ServerError) as caught:
        await WyomingTranscriber(uri).start()
    sentence = caught.value.sentence
    assert caught.value.stage is Stage.HEARING and caught.value.code == "server_unreachable"
    assert sentence.startswith(f"I can't reach my hearing server at {uri} (nothing answers there).")
    assert "python -m wyoming_faster_whisper --uri tcp://0.0.0.0:10300" in sentence
    assert 'set voice.hearing to "local"' in sentence


async def test_an_utterance_cut_off_halfway_is_sent_once_more(wyoming_hearing, piper_voice):
    question = speech(piper_voice, "How far away is the moon?")
    async with FlakyLink(wyoming_hearing.port, cut_after=len(question)) as link:  # about half the audio
        text = await WyomingTranscriber(link.uri).transcribe(question)
    assert link.cut == 1 and link.connections == 2
    assert words(text) == "how far away is the moon"


async def test_an_utterance_cut_off_twice_is_reported_not_waited_for(wyoming_hearing, piper_voice):
    question = speech(piper_voice, "How far away is the moon?")
    async with FlakyLink(wyoming_hearing.port, cut_after=len(question), cuts=2) as link:
        uri = link.uri
        with pytest.raises(ServerError) as caught:
            await WyomingTranscriber(uri).transcribe(question)
    assert link.connections == 2
    assert caught.value.code == "server_dropped"
    assert f"My hearing server at {uri} closed the connection before answering." in caught.value.sentence


async def test_a_server_that_never_answers_times_out_in_bounded_time():
    async with Silent() as silent:
        started = time.monotonic()
        with pytest.raises(ServerError) as caught:
            await WyomingTranscriber(silent.uri, transcript_timeout_s=0.5).transcribe(np.zeros(8000, np.float32))
        assert time.monotonic() - started < 5
    assert caught.value.code == "server_timeout"
    assert "did not answer within 0 s" not in caught.value.sentence  # rounds to something meaningful
    with pytest.raises(ServerError) as caught:
        async with Silent() as silent:
            await WyomingSynthesizer(silent.uri, first_audio_timeout_s=0.5).synthesize("Hello.")
    assert caught.value.code == "server_timeout"


def _errors(bus: EventBus) -> list[ErrorOccurred]:
    errors: list[ErrorOccurred] = []
    bus.subscribe(lambda event: errors.append(event) if isinstance(event, ErrorOccurred) else None)
    return errors


def _said(bus: EventBus) -> list[str]:
    said: list[str] = []
    bus.subscribe(lambda event: said.append(event.text) if isinstance(event, Speak) else None)
    return said


async def test_when_the_hearing_server_dies_her_own_whisper_takes_over_and_she_says_so_once(
        tmp_path, hearing, piper_voice):
    bus = EventBus()
    errors, said = _errors(bus), _said(bus)
    with hearing_server(tmp_path) as server:
        ears = RemoteHearing(WyomingTranscriber(server.uri), lambda: hearing, bus)
        await ears.start()
        assert ears.using_remote and not errors, errors
        first = await ears.transcribe(speech(piper_voice, "What time is it?"))
        assert words(first) == "what time is it" and ears.remote.requests == 1
        server.kill()
        second = await ears.transcribe(speech(piper_voice, "How far away is the moon?"))
    # The utterance the server missed was heard by her own Whisper: nothing was lost.
    assert words(second) == "how far away is the moon"
    assert not ears.using_remote and ears.local is hearing
    assert len(errors) == 1 and errors[0].stage == "hearing"
    assert server.uri in errors[0].sentence
    assert errors[0].sentence.endswith("I'm using my own hearing on this computer until you fix it.")
    assert said == ["My hearing server on 127.0.0.1 isn't answering, so I'm using my own hearing on this computer."]
    third = await ears.transcribe(speech(piper_voice, "What should I cook for dinner?"))
    assert words(third) == "what should i cook for dinner"
    assert len(errors) == 1 and len(said) == 1 and ears.remote.requests == 2


async def test_the_notice_about_a_dead_server_belongs_to_no_turn_even_when_a_turns_request_failed(
        unused_port, piper_voice):
    bus = EventBus()
    notices: list[Speak] = []
    bus.subscribe(lambda event: notices.append(event) if isinstance(event, Speak) else None)
    mouth = RemoteVoice(WyomingSynthesizer(f"tcp://127.0.0.1:{unused_port}"), lambda: piper_voice, bus)
    with turn_scope(7):  # the sentence that found the server gone belonged to turn 7
        audio = await mouth.synthesize("It is a quiet evening.")
    assert audio.size > 0
    # Turn 0: her mouth says it whatever becomes of turn 7 (interrupted, or over before it is said).
    assert [(e.text.startswith("My voice server"), e.turn) for e in notices] == [(True, 0)]


async def test_without_a_local_whisper_a_dead_hearing_server_leaves_typing(unused_port, piper_voice):
    bus = EventBus()
    errors = _errors(bus)
    said = _said(bus)
    ears = RemoteHearing(WyomingTranscriber(f"tcp://127.0.0.1:{unused_port}"), None, bus)
    await ears.start()
    assert await ears.transcribe(speech(piper_voice, "Hello there.")) == ""
    assert len(errors) == 1 and errors[0].sentence.endswith("Until then I can't hear you: type to me instead.")
    # Unreachable at start: the notice waits for her voice to be up, then is said once.
    assert said == [] and "Please type to me." in ears.take_notice()
    assert ears.take_notice() is None


async def test_when_the_voice_server_dies_her_own_piper_says_the_next_sentence(tmp_path, hearing, piper_voice):
    bus = EventBus()
    errors, said = _errors(bus), _said(bus)
    with voice_server(tmp_path) as server:
        mouth = RemoteVoice(WyomingSynthesizer(server.uri), lambda: piper_voice, bus)
        await mouth.start()
        assert mouth.using_remote, errors
        first = await mouth.synthesize("It is a quiet evening.")
        server.kill()
        second = await mouth.synthesize("The moon is far away.")
    for audio, text in ((first, "it is a quiet evening"), (second, "the moon is far away")):
        assert words(hearing.transcribe_sync(resample(audio, mouth.sample_rate, 16_000))) == text
    assert not mouth.using_remote and mouth.local is piper_voice
    assert mouth.remote.synth_count == 2, "the second sentence went to the server first"
    assert len(errors) == 1 and errors[0].stage == "speaking" and server.uri in errors[0].sentence
    assert said == ["My voice server on 127.0.0.1 isn't answering, so I'm using my own voice on this computer."]


async def test_a_voice_server_unreachable_at_start_falls_back_before_the_first_word(unused_port, piper_voice):
    bus = EventBus()
    errors = _errors(bus)
    mouth = RemoteVoice(WyomingSynthesizer(f"tcp://127.0.0.1:{unused_port}"), lambda: piper_voice, bus)
    await mouth.start()
    assert mouth.local is piper_voice and mouth.sample_rate == piper_voice.sample_rate
    assert len(errors) == 1 and "I can't reach my voice server" in errors[0].sentence
    assert len(await mouth.synthesize("Hello.")) > 0


async def test_an_utterance_arriving_while_her_own_whisper_loads_waits_for_it(unused_port, piper_voice, tmp_path):
    import threading

    from companion.voice.hearing.stt import WhisperTranscriber
    from companion.voice.models.files import resolve_hearing_model

    loading = threading.Event()

    def load_whisper() -> WhisperTranscriber:
        loading.set()
        engine = WhisperTranscriber(resolve_hearing_model("", tmp_path))
        engine.load()  # a second or two: the window in which the next utterance arrives
        return engine

    ears = RemoteHearing(WyomingTranscriber(f"tcp://127.0.0.1:{unused_port}"), load_whisper, EventBus())
    first = asyncio.create_task(ears.transcribe(speech(piper_voice, "What is the capital of France?")))
    await asyncio.to_thread(loading.wait)
    second = await ears.transcribe(speech(piper_voice, "How far away is the moon?"))
    assert words(second) == "how far away is the moon"
    assert words(await first) == "what is the capital of france"
