"""She knows her user's voice, through the real pipeline from files: real Whisper, the real
speaker encoder, piper's Joe as the user and an espeak-ng woman as the stranger, the real
runtime and gate, the scripted brain over HTTP. Each behaviour has its twin with knowing
voices off, where the same audio does what it did before."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np
import pytest
from calling_support import CALLED, conversation, espeak, run_over, said, started, user_lines
from test_voice_card_answers import with_a_card_open

from companion.events import VoiceIgnored
from companion.voice.voiceprint import SpeakerEncoder, VoiceprintStore
from companion.voice.whose_words import STRANGER_ANSWER

KNOWING = replace(CALLED, know_voices="yes")
STRANGER = "en-us+f3"
"""An espeak-ng woman: scored 0.2-0.4 against Joe by the encoder, far from his 0.8 against himself."""
ENROLMENT = ("Good morning, how did you sleep?", "Please open the shopping list for me.",
             "I think we should leave at six tonight.", "What is the weather like in Paris today?",
             "Play some quiet music while I read.", "Remind me to water the plants on Sunday.",
             "Could you tell me how long the drive to the coast takes?")


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    return SpeakerEncoder()


def ignored_voices(companion) -> list[str]:
    """The reasons of every VoiceIgnored her bus carries from now on (her log's and her face's)."""
    reasons: list[str] = []
    companion.bus.subscribe(lambda e: reasons.append(e.reason) if isinstance(e, VoiceIgnored) else None)
    return reasons


def enrol_joe(companion, piper_voice, encoder: SpeakerEncoder) -> None:
    """The user's voice learned beforehand, as her calls would have: seven of Joe's utterances."""
    store = VoiceprintStore(companion.paths.data_dir)
    for line in ENROLMENT:
        audio = said(piper_voice, line)
        store.add("you", encoder.embed_sync(audio), audio.size / 16_000)


async def test_a_stranger_inside_the_follow_up_window_starts_no_turn(tmp_path, scripted_brain, piper_voice, hearing):
    scripted_brain.push({"text": "It's ten past nine."}, {"text": "Here you are."})
    wav = conversation(tmp_path / "room.wav", said(piper_voice, "Mira, what time is it?"), 1.5,
                       espeak("Can you pass me the salt?", STRANGER, tmp_path), 1.5)
    companion = await started(tmp_path, scripted_brain)
    ignored = ignored_voices(companion)
    try:
        session = await run_over(companion, wav, piper_voice, hearing, KNOWING)
    finally:
        await companion.close()

    assert [v.reason for v in session.loop.calling.verdicts] == ["name", "other-voice"]
    assert len(user_lines(companion)) == 1 and "time" in user_lines(companion)[0]
    assert len(scripted_brain.requests) == 1
    assert ignored == ["other-voice"]  # the reason, for her log and her face


async def test_without_knowing_voices_the_strangers_question_in_the_window_is_a_follow_up(
        tmp_path, scripted_brain, piper_voice, hearing):
    """The test above bites: the same audio with knowing voices off reaches the brain twice."""
    scripted_brain.push({"text": "It's ten past nine."}, {"text": "Here you are."})
    wav = conversation(tmp_path / "room.wav", said(piper_voice, "Mira, what time is it?"), 1.5,
                       espeak("Can you pass me the salt?", STRANGER, tmp_path), 1.5)
    companion = await started(tmp_path, scripted_brain)
    ignored = ignored_voices(companion)
    try:
        session = await run_over(companion, wav, piper_voice, hearing, CALLED)
    finally:
        await companion.close()

    assert [v.reason for v in session.loop.calling.verdicts] == ["name", "follow-up"]
    assert ignored == []


async def test_the_callers_own_follow_up_starts_a_turn(tmp_path, scripted_brain, piper_voice, hearing):
    scripted_brain.push({"text": "It's ten past nine."}, {"text": "It's Tuesday."})
    wav = conversation(tmp_path / "follow.wav", said(piper_voice, "Mira, what time is it?"), 1.5,
                       said(piper_voice, "And what day of the week is it?"), 1.5)
    companion = await started(tmp_path, scripted_brain)
    try:
        session = await run_over(companion, wav, piper_voice, hearing, KNOWING)
    finally:
        await companion.close()

    assert [v.reason for v in session.loop.calling.verdicts] == ["name", "follow-up"]
    assert len(user_lines(companion)) == 2 and "day" in user_lines(companion)[1]
    assert session.loop.calling.voices.embedded == 2  # the call and the follow-up, each once


async def test_a_strangers_spoken_yes_run_it_does_not_approve_the_card(
        tmp_path, scripted_brain, piper_voice, hearing, encoder):
    companion, typed, spoken = await with_a_card_open(tmp_path, scripted_brain)
    ignored = ignored_voices(companion)
    try:
        enrol_joe(companion, piper_voice, encoder)
        wav = conversation(tmp_path / "guest.wav", espeak("Yes, run it.", STRANGER, tmp_path), 1.5)
        await run_over(companion, wav, piper_voice, hearing, KNOWING)
        still_open = bool(companion.gate.approver.pending())
        refused = STRANGER_ANSWER in spoken and ignored == ["card-stranger"]
        wav = conversation(tmp_path / "user.wav", said(piper_voice, "Yes, run it."), 1.5)
        await run_over(companion, wav, piper_voice, hearing, KNOWING)
        await asyncio.wait_for(typed, 30)
        decisions = [e["decision"] for e in companion.gate.audit.entries()]
    finally:
        await companion.close()

    assert still_open and refused, (spoken, ignored)
    assert decisions == ["approved"]  # the user's own yes, afterwards
    assert ignored == ["card-stranger"]  # and the user's yes was no voice ignored


async def test_without_knowing_voices_the_strangers_yes_approves_the_card(
        tmp_path, scripted_brain, piper_voice, hearing, encoder):
    """The test above bites: with knowing voices off the same stranger's yes is taken."""
    companion, typed, _ = await with_a_card_open(tmp_path, scripted_brain)
    try:
        enrol_joe(companion, piper_voice, encoder)
        wav = conversation(tmp_path / "guest.wav", espeak("Yes, run it.", STRANGER, tmp_path), 1.5)
        await run_over(companion, wav, piper_voice, hearing, CALLED)
        await asyncio.wait_for(typed, 30)
        decisions = [e["decision"] for e in companion.gate.audit.entries()]
    finally:
        await companion.close()

    assert decisions == ["approved"]


async def test_only_me_answers_the_known_voice_uncalled_and_ignores_another(
        tmp_path, scripted_brain, piper_voice, hearing, encoder):
    scripted_brain.push({"text": "It's Tuesday."}, {"text": "Mm."})
    wav = conversation(tmp_path / "room.wav", espeak("What time is the meeting tomorrow?", STRANGER, tmp_path), 1.5,
                       said(piper_voice, "What day of the week is it today, and will it rain?"), 1.5,
                       espeak("Mira, can you pass me the salt?", STRANGER, tmp_path), 1.5)
    companion = await started(tmp_path, scripted_brain)
    ignored = ignored_voices(companion)
    try:
        enrol_joe(companion, piper_voice, encoder)
        session = await run_over(companion, wav, piper_voice, hearing, replace(KNOWING, listening="only_me"))
    finally:
        await companion.close()

    assert [v.reason for v in session.loop.calling.verdicts] == ["not-you", "only-me", "not-you"]
    assert ignored == ["not-you", "not-you"]
    assert len(user_lines(companion)) == 1 and "day" in user_lines(companion)[0]


def test_the_voiceprints_file_holds_numbers_and_no_audio(tmp_path, piper_voice, encoder):
    audio = said(piper_voice, ENROLMENT[0])
    store = VoiceprintStore(tmp_path)
    store.add("you", encoder.embed_sync(audio), audio.size / 16_000)
    text = (tmp_path / "voiceprints.json").read_text()

    assert len(text) < 8_000 and audio.size > 16_000
    assert np.allclose(VoiceprintStore(tmp_path).get("you").centroid(), encoder.embed_sync(audio), atol=1e-5)
