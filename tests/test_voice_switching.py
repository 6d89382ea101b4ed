"""Engine switches that can't be half-done: a server gone mid-request hands over to her own engine
in one step, whatever happens to the request that found it gone, and she checks the engine works."""

from __future__ import annotations

import asyncio
import re
import threading

import numpy as np
import pytest
from audio_env import speech

from companion.errors import Stage
from companion.events import ErrorOccurred, EventBus, Speak, turn_scope
from companion.voice.audio import resample
from companion.voice.fallback import RemoteHearing, RemoteVoice
from companion.voice.remote import dropped


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
