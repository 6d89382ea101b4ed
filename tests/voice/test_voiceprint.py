"""The voiceprint room on its own: the encoder on real people's and synthetic speech, the
store in her data folder, learning from the calls, and what the voice decides (no devices)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from audio_env import spoken

from companion.voice.addressing.addressed import Addressing, AddressSettings, Listening
from companion.voice.addressing.voice_owner import by_voice
from companion.voice.sound.audio import read_wav, resample
from companion.voice.voiceprint import SpeakerEncoder, VoiceprintStore, Voices
from companion.voice.voiceprint.enrolment import SURE_UTTERANCES, Enrolment
from companion.voice.voiceprint.features import log_mel, windows

LINES = ("Mira, what time is it in Tokyo right now?", "And what day of the week is it there?",
         "Please open the shopping list for me.", "I think we should leave at six tonight.",
         "Remind me to call the dentist tomorrow morning.", "Play some quiet music while I read.",
         "Could you tell me how long the drive to the coast takes?")


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    return SpeakerEncoder()


def espeak(text: str, voice: str, folder: Path) -> np.ndarray:
    path = folder / "e.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, timeout=30)
    audio, rate = read_wav(path)
    return resample(audio, rate, 16_000)


def joe(piper_voice, text: str) -> np.ndarray:
    return spoken(piper_voice, text)  # made once per process (audio_env.spoken), read-only


def test_the_features_are_40_log_mel_bands_every_10_ms_in_80_frame_windows():
    features = log_mel(np.random.default_rng(1).standard_normal(32_000).astype(np.float32))

    assert features.shape == (1 + (32_000 - 512) // 160, 40)
    assert windows(features).shape == (1 + (features.shape[0] - 80) // 40, 80, 40)
    assert windows(features[:30]).shape == (1, 80, 40)  # a short piece is padded to one window


def test_one_voice_scores_above_the_thresholds_and_another_below(tmp_path, piper_voice, encoder):
    from companion.voice.voiceprint import KNOWN_THRESHOLD, PAIR_THRESHOLD

    mine = [encoder.embed_sync(joe(piper_voice, line)) for line in LINES[:4]]
    theirs = [encoder.embed_sync(espeak(line, "en-us+f3", tmp_path)) for line in LINES[:4]]
    centroid = np.mean(mine[:3], axis=0)
    centroid /= np.linalg.norm(centroid)

    assert float(centroid @ mine[3]) >= KNOWN_THRESHOLD
    assert max(float(centroid @ e) for e in theirs) < KNOWN_THRESHOLD
    assert float(mine[0] @ mine[1]) >= PAIR_THRESHOLD > float(mine[0] @ theirs[0])
    assert encoder.embed_sync(np.zeros(4_000, dtype=np.float32)) is None  # a quarter second says nothing


def test_the_embedding_runs_on_the_encoders_own_thread_not_the_event_loops(piper_voice, encoder):
    threads: list[str] = []
    original = encoder.embed_sync

    def watched(audio):
        threads.append(threading.current_thread().name)
        return original(audio)

    encoder.embed_sync = watched
    try:
        asyncio.run(encoder.embed(joe(piper_voice, LINES[0])))
    finally:
        del encoder.embed_sync
    assert threads and threads[0].startswith("voiceprint") and threads[0] != threading.main_thread().name


def test_voiceprints_are_listed_with_when_they_were_made_and_can_be_deleted(tmp_path):
    store = VoiceprintStore(tmp_path)
    store.add("you", np.eye(256, dtype=np.float32)[0], 2.5, at=1_700_000_000)
    store.add("Sam", np.eye(256, dtype=np.float32)[1], 3.0, at=1_700_000_100)

    listing = VoiceprintStore(tmp_path).listing()
    assert [(name, seconds, count) for name, _, seconds, count in listing] == [("Sam", 3.0, 1), ("you", 2.5, 1)]
    assert all(len(made) == 16 for _, made, _, _ in listing)  # "YYYY-MM-DD HH:MM"
    assert store.delete("Sam") and not store.delete("Sam")
    assert VoiceprintStore(tmp_path).names() == ["you"]


def test_a_damaged_voiceprints_file_is_set_aside_and_she_starts_with_none(tmp_path):
    (tmp_path / "voiceprints.json").write_text("{not json")

    assert VoiceprintStore(tmp_path).names() == []
    assert (tmp_path / "voiceprints.damaged").read_text() == "{not json"


def test_learning_from_calls_says_it_is_not_sure_until_enough_and_keeps_out_another_voice(
        tmp_path, piper_voice, encoder):
    enrolment = Enrolment(VoiceprintStore(tmp_path), threshold=0.66)
    assert "haven't learned" in enrolment.state().sentence()

    for line in LINES[:SURE_UTTERANCES - 1]:
        audio = joe(piper_voice, line)
        assert enrolment.learn(encoder.embed_sync(audio), audio.size / 16_000)
    unsure = enrolment.state()
    stranger = espeak("Remind me to buy some milk on the way home.", "en-us+f3", tmp_path)
    learned_stranger = enrolment.learn(encoder.embed_sync(stranger), stranger.size / 16_000)
    for line in LINES[SURE_UTTERANCES - 1:]:
        audio = joe(piper_voice, line)
        enrolment.learn(encoder.embed_sync(audio), audio.size / 16_000)

    assert not unsure.sure and "still learning" in unsure.sentence()
    assert not learned_stranger
    assert enrolment.state().sure and "I know your voice" in enrolment.state().sentence()
    saved = json.loads((tmp_path / "voiceprints.json").read_text())
    assert set(saved["voiceprints"][0]["segments"][0]) == {"embedding", "seconds", "at"}  # numbers, no audio


def heard(voices: Voices, *pieces: np.ndarray) -> list[tuple[float, float]]:
    """Feed the pieces through the ear's door in 32 ms frames, 1 s apart; their (start, end)."""
    spans, at, frame = [], 0.0, 512
    for piece in pieces:
        audio = np.concatenate([np.zeros(16_000, dtype=np.float32), piece])
        start = at + 1.0
        for i in range(0, audio.size - frame + 1, frame):
            at += frame / 16_000
            voices.hear(audio[i:i + frame], at)
        spans.append((start, at))
    return spans


async def talked_over(tmp_path, piper_voice, encoder, mode: Listening, enrolled: bool, knowing: bool = True) -> list[str]:
    """Joe calls her; while she answers, a stranger and then Joe talk over her. The verdicts
    (`knowing` False: the words alone judge, as with knowing voices off)."""
    store = VoiceprintStore(tmp_path)
    if enrolled:
        for line in LINES[1:]:
            audio = joe(piper_voice, line)
            store.add("you", encoder.embed_sync(audio), audio.size / 16_000)
    voices = Voices(encoder, store, learn=False)
    policy = Addressing(AddressSettings(mode=mode, names=("Mira",)))
    call, stranger, user = heard(voices, joe(piper_voice, LINES[0]), espeak("Stop, stop that.", "en-us+f3", tmp_path),
                                 joe(piper_voice, "Stop, stop that."))
    async def judge(text, start, end, **kwargs):
        if knowing:
            return await by_voice(policy, voices, text, start, end, **kwargs)
        return policy.judge(text, start, end, **kwargs)

    verdicts = [await judge(LINES[0], *call)]
    policy.answering()
    verdicts.append(await judge("Stop, stop that.", *stranger, stopped_her=True))
    verdicts.append(await judge("Stop, stop that.", *user, stopped_her=True))
    return [v.reason for v in verdicts]


async def test_talking_over_her_a_stranger_does_not_stop_her_when_called_and_the_user_does(
        tmp_path, piper_voice, encoder):
    assert await talked_over(tmp_path, piper_voice, encoder, Listening.CALLED, enrolled=True) == [
        "name", "other-voice", "follow-up"]


async def test_talking_over_her_without_knowing_voices_anyone_stops_her_as_before(tmp_path, piper_voice, encoder):
    """The test above bites: with the words alone, the stranger's stop stops her."""
    assert await talked_over(tmp_path, piper_voice, encoder, Listening.CALLED, enrolled=True, knowing=False) == [
        "name", "follow-up", "follow-up"]


async def test_talking_over_her_a_known_voice_stops_her_even_when_someone_else_called(
        tmp_path, piper_voice, encoder):
    """Joe enrolled; a stranger's call opened the turn: Joe's stop still stops her, the stranger's own too."""
    store = VoiceprintStore(tmp_path)
    for line in LINES[1:]:
        audio = joe(piper_voice, line)
        store.add("you", encoder.embed_sync(audio), audio.size / 16_000)
    voices = Voices(encoder, store, learn=False)
    assert voices.enrolled
    policy = Addressing(AddressSettings(mode=Listening.CALLED, names=("Mira",)))
    call, user = heard(voices, espeak(LINES[0], "en-us+f3", tmp_path), joe(piper_voice, "Stop, stop that."))
    first = await by_voice(policy, voices, LINES[0], *call)
    policy.answering()
    second = await by_voice(policy, voices, "Stop, stop that.", *user, stopped_her=True)

    assert (first.reason, second.reason) == ("name", "follow-up")


async def test_only_me_with_no_voice_known_yet_answers_as_when_called(tmp_path, piper_voice, encoder):
    voices = Voices(encoder, VoiceprintStore(tmp_path), learn=False)
    policy = Addressing(AddressSettings(mode=Listening.ONLY_ME, names=("Mira",)))
    called, uncalled = heard(voices, espeak(LINES[0], "en-us+f3", tmp_path), espeak(LINES[3], "en-us+f3", tmp_path))

    first = await by_voice(policy, voices, LINES[0], *called)  # she never answered it: no window
    second = await by_voice(policy, voices, LINES[3], *uncalled)

    assert (first.reason, second.reason) == ("name", "not-called")


async def test_nothing_is_embedded_when_no_decision_depends_on_a_voice(tmp_path, piper_voice, encoder):
    """Not learning, nobody known, no window: a call and the room's talk cost no embedding."""
    voices = Voices(encoder, VoiceprintStore(tmp_path), learn=False)
    policy = Addressing(AddressSettings(mode=Listening.CALLED, names=("Mira",)))
    call, room = heard(voices, joe(piper_voice, LINES[0]), espeak(LINES[3], "en-us+f3", tmp_path))

    await by_voice(policy, voices, LINES[0], *call)
    policy.answered(room[0] - 20.0)  # her answer's window closed before the room spoke
    await by_voice(policy, voices, LINES[3], *room)

    assert voices.embedded == 0


async def test_in_only_me_the_users_short_stop_over_her_stops_her_and_a_strangers_does_not(
        tmp_path, piper_voice, encoder):
    store = VoiceprintStore(tmp_path)
    for line in LINES[1:]:
        audio = joe(piper_voice, line)
        store.add("you", encoder.embed_sync(audio), audio.size / 16_000)
    voices = Voices(encoder, store, learn=False)
    policy = Addressing(AddressSettings(mode=Listening.ONLY_ME, names=("Mira",)))
    asked, user, guest = heard(voices, joe(piper_voice, LINES[0]), joe(piper_voice, "Stop."),
                               espeak("Stop.", "en-us+f3", tmp_path))
    first = await by_voice(policy, voices, LINES[0], *asked)
    policy.answering()
    verdicts = [first.reason]
    for span in (user, guest):
        verdicts.append((await by_voice(policy, voices, "Stop.", *span, stopped_her=True)).reason)

    assert verdicts == ["name", "follow-up", "not-you"]
