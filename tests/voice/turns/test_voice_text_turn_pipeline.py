"""The words' model through her real pipeline: VAD, endpointer, Whisper, Smart Turn and SmolLM2."""

from __future__ import annotations

import pytest
from audio_env import speech
from file_talk import converse

from companion.events import HoldingChanged
from companion.voice.sound.audio import write_wav
from companion.voice.turns.text_turn import TextTurn, resolve_text_model

OPEN_PREFIX = ("Please remind me", 0.9, "to water the plants this evening.")
"""Whisper writes the prefix "Please remind me." and it sounds finished: only its meaning is open."""


@pytest.fixture(scope="module")
def text_model() -> TextTurn:
    model = TextTurn(resolve_text_model())
    model.load()
    return model


def holding_into(holds: list[bool]):
    """A bus watcher gathering each HoldingChanged her face is told."""
    return lambda event: isinstance(event, HoldingChanged) and holds.append(event.holding)


async def test_a_spoken_open_prefix_and_a_thinking_pause_stay_one_turn_with_the_words_model(
        tmp_path, scripted_brain, hearing, piper_voice, turn_model, text_model, monkeypatch):
    monkeypatch.setattr(turn_model, "text", text_model)
    scripted_brain.push({"text": "I'll remind you."}, {"text": "Anything else?"})
    wav = tmp_path / "q.wav"
    write_wav(wav, speech(piper_voice, *OPEN_PREFIX, tail_s=2.5), 16_000)
    holds: list[bool] = []
    session = await converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model, watch=holding_into(holds))
    assert len(session.loop.heard) == 1, session.loop.heard
    assert "plants" in session.loop.heard[0]
    assert holds[:1] == [True] and holds[-1] is False, holds  # her face listened through the pause


async def test_without_the_words_model_the_same_open_prefix_is_cut_at_the_thinking_pause(
        tmp_path, scripted_brain, hearing, piper_voice, turn_model, monkeypatch):
    monkeypatch.setattr(turn_model, "text", None)
    scripted_brain.push({"text": "I'll remind you."}, {"text": "Anything else?"})
    wav = tmp_path / "q.wav"
    write_wav(wav, speech(piper_voice, *OPEN_PREFIX, tail_s=2.5), 16_000)
    session = await converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model)
    assert len(session.loop.heard) == 2, session.loop.heard


async def test_a_complete_question_ends_at_the_first_check_with_the_words_model(
        tmp_path, scripted_brain, hearing, piper_voice, turn_model, text_model, monkeypatch):
    monkeypatch.setattr(turn_model, "text", text_model)
    scripted_brain.push({"text": "Noon."})
    wav = tmp_path / "q.wav"
    write_wav(wav, speech(piper_voice, "What time is it?", tail_s=2.5), 16_000)
    holds: list[bool] = []
    session = await converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model, watch=holding_into(holds))
    assert session.loop.heard == ["What time is it?"]
    assert holds == []  # nothing held her
    [latency] = session.loop.latencies
    [verdict] = latency.verdicts
    assert verdict.complete and verdict.text is not None and verdict.silence_ms < 200
    assert "meaning=" in latency.summary()  # the stage breakdown says what the words meant
