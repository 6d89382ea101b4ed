"""Open speakers, no headset: her voice comes back into the microphone at -6 dB after 60 ms
(the private PulseAudio's loopback), and with the default settings she neither hears nor
interrupts herself, yet stops when the user talks over her. With echo cancellation switched
off the same conversation goes wrong, which shows the first test bites."""

from __future__ import annotations

import asyncio
import json

import pytest
from audio_env import hibari_voice_fixture  # noqa: F401 (the hibari_voice fixture)
from e2e_support import words
from open_speaker_talk import HER_WORDS, INTERRUPTION, she_finished, stop_latency_s, talk
from voice_pitch import median_pitch_hz

from companion.config import VoiceSettings

TALK_BOUND_S = 90
"""A conversation that misses its turn fails here (under pytest-timeout's 120 s) instead of
waiting for a line that never comes."""
STOP_BOUND_S = 0.8
"""From the user's first sound to her last, as heard on the witness recording."""


async def test_on_open_speakers_she_finishes_a_long_reply_without_hearing_herself(
        tmp_path, pulse_audio, scripted_brain, piper_voice, hearing, sound_backend):
    result = await asyncio.wait_for(talk(tmp_path, pulse_audio, scripted_brain, piper_voice, hearing,
                                         voice=VoiceSettings(listening="always", sound_backend=sound_backend)),
                                    TALK_BOUND_S)

    assert she_finished(result, hearing) == []
    assert [words(line) for line in result.heard_lines] == [words("Tell me about Canberra.")]


async def test_with_echo_cancellation_off_she_hears_herself_on_open_speakers(
        tmp_path, pulse_audio, scripted_brain, piper_voice, hearing):
    try:
        result = await asyncio.wait_for(talk(tmp_path, pulse_audio, scripted_brain, piper_voice, hearing,
                                             voice=VoiceSettings(echo_cancellation=False, listening="always")), 90)
    except TimeoutError:
        # She never fell quiet: her echo kept stopping her and starting turns of its own.
        problems = ["her echo kept her talking to herself for 90 s"]
    else:
        problems = she_finished(result, hearing)
    assert problems, "without echo cancellation her echo should have stopped or fooled her"
    print(json.dumps({"echo_cancellation_off": problems}))


@pytest.mark.parametrize("echo_db", [-6, 0])  # at 0 dB her echo is as loud as she plays
async def test_talking_over_her_two_seconds_in_stops_her_quickly_and_the_user_is_heard(
        tmp_path, pulse_audio, scripted_brain, piper_voice, hearing, record_property, echo_db, sound_backend):
    result = await asyncio.wait_for(talk(tmp_path, pulse_audio, scripted_brain, piper_voice, hearing,
                                         voice=VoiceSettings(listening="always", sound_backend=sound_backend),
                                         interrupt_after_s=2.0, echo_db=echo_db), TALK_BOUND_S)

    assert result.barge_ins == 1
    assert len(result.heard_lines) == 2, result.heard_lines
    # The words said over her pass through the canceller's double-talk suppression, which costs
    # some of them at her own loudness ("We start talking now.", "Please stopped talking now."):
    # the user is heard when most of the sentence is, and none of her reply with it.
    interruption = words(result.heard_lines[1])
    assert len(set(words(INTERRUPTION)) & set(interruption)) >= 2, result.heard_lines
    assert not HER_WORDS & set(interruption), result.heard_lines
    stop_s = stop_latency_s(result)
    record_property("open_speakers_stop_s", round(stop_s, 3))
    print(json.dumps({"open_speakers_stop_s": round(stop_s, 3), "bound_s": STOP_BOUND_S, "echo_db": echo_db,
                      "heard": result.heard_lines, "interruption": INTERRUPTION}))
    assert 0 < stop_s <= STOP_BOUND_S


async def test_mira_in_her_own_voice_on_open_speakers_never_hears_herself_and_stops_when_talked_over(
        tmp_path, pulse_audio, scripted_brain, piper_voice, hibari_voice, hearing):
    """Issue 54: Mira speaks with hibari's heart (a woman's voice, 24 kHz), the user with Joe's. Her
    echo canceller, echo filter and barge-in work on her voice as on piper's."""
    result = await asyncio.wait_for(talk(tmp_path, pulse_audio, scripted_brain, piper_voice, hearing,
                                         voice=VoiceSettings(listening="always"), her_voice=hibari_voice,
                                         interrupt_after_s=2.0), TALK_BOUND_S)

    assert median_pitch_hz(result.hers, 16_000) > 160  # her voice in the room was hibari's, not Joe's (~90 Hz)
    assert result.barge_ins == 1
    assert len(result.heard_lines) == 2, result.heard_lines
    assert words(result.heard_lines[0]) == words("Tell me about Canberra.")
    interruption = words(result.heard_lines[1])
    assert len(set(words(INTERRUPTION)) & set(interruption)) >= 2, result.heard_lines
    assert not HER_WORDS & set().union(*(words(line) for line in result.heard_lines)), result.heard_lines
    stop_s = stop_latency_s(result)
    print(json.dumps({"mira_open_speakers_stop_s": round(stop_s, 3), "heard": result.heard_lines}))
    assert 0 < stop_s <= STOP_BOUND_S
