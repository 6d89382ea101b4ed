"""The words' model through her real pipeline: VAD, endpointer, Whisper, Smart Turn and SmolLM2."""

from __future__ import annotations

import pytest
from audio_env import speech
from brain_harness import make_config

from companion.config import VoiceSettings
from companion.events import EventBus, HoldingChanged
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, WavSource, write_wav
from companion.voice.turns.text_turn import TextTurn, resolve_text_model

OPEN_PREFIX = ("Please remind me", 0.9, "to water the plants this evening.")
"""Whisper writes the prefix "Please remind me." and it sounds finished: only its meaning is open."""


@pytest.fixture(scope="module")
def text_model() -> TextTurn:
    model = TextTurn(resolve_text_model())
    model.load()
    return model


async def converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model,
                   holds: list[bool] | None = None) -> VoiceSession:
    """One spoken conversation from `wav`; `holds` gathers each HoldingChanged her face is told."""
    companion = Companion(make_config(tmp_path, scripted_brain.url), EventBus())
    if holds is not None:
        companion.bus.subscribe(lambda event: isinstance(event, HoldingChanged) and holds.append(event.holding))
    await companion.start()
    source = WavSource(wav, realtime=False)
    sink = WavSink(lambda: source.position_s, rate=piper_voice.sample_rate, realtime=False)
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice, voice=VoiceSettings(listening="always"),
                           turn_model=turn_model)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    return session


async def test_a_spoken_open_prefix_and_a_thinking_pause_stay_one_turn_with_the_words_model(
        tmp_path, scripted_brain, hearing, piper_voice, turn_model, text_model, monkeypatch):
    monkeypatch.setattr(turn_model, "text", text_model)
    scripted_brain.push({"text": "I'll remind you."}, {"text": "Anything else?"})
    wav = tmp_path / "q.wav"
    write_wav(wav, speech(piper_voice, *OPEN_PREFIX, tail_s=2.5), 16_000)
    holds: list[bool] = []
    session = await converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model, holds)
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
    session = await converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model, holds)
    assert session.loop.heard == ["What time is it?"]
    assert holds == []  # nothing held her
    [latency] = session.loop.latencies
    [verdict] = latency.verdicts
    assert verdict.complete and verdict.text is not None and verdict.silence_ms < 200
    assert "meaning=" in latency.summary()  # the stage breakdown says what the words meant
