"""While the user still speaks, the words heard before a pause go ahead to fill her brain's prompt
cache (brain/fill.py): the ear hands each pause's early transcript to the loop, which sends it
when a turn would start on those words. Through the real pipeline: VAD, Whisper, the turn
models, the loop, her brain's client and the scripted server over HTTP."""

from __future__ import annotations

import asyncio

from audio_env import speech_wav
from file_talk import converse
from one_slot_brain import is_fill

from companion.voice.turns import ear


async def _asked(tmp_path, scripted_brain, hearing, piper_voice, turn_model, **sections) -> tuple[list, list]:
    """The question with a pause inside it, heard from a file after her start-up warm-up; the
    fills her brain received (requests of one token, past the warm-up) and her real requests."""
    scripted_brain.fallback = {"text": "Kilimanjaro, about a week."}
    wav = speech_wav(tmp_path / "question.wav", piper_voice, "Could you tell me how long it takes to climb the", 0.9,
                     "tallest mountain in Africa?", tail_s=2.0)
    await converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model,
                   ready=lambda: asyncio.to_thread(scripted_brain.wait_for_warm_ups, 1), **sections)
    return [w for w in scripted_brain.warm_ups if is_fill(w)], scripted_brain.bodies


def _user_words(body: dict) -> str:
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"].lower()


async def test_words_before_a_pause_in_a_question_fill_her_brain_before_the_question_ends(
        tmp_path, scripted_brain, hearing, piper_voice, turn_model, monkeypatch):
    # No reply prepared at the pause (its own request would carry the words instead of a fill).
    monkeypatch.setattr(ear, "PREPARE_AFTER_MS", 60_000)
    fills, real = await _asked(tmp_path, scripted_brain, hearing, piper_voice, turn_model)
    assert fills and real
    first_fill, question = fills[0], real[-1]
    assert "how long it takes to climb" in _user_words(first_fill)
    assert "africa" not in _user_words(first_fill)  # sent before the question ended
    assert "africa" in _user_words(question)
    # The same request but for the words: what the server caches is the real one's beginning.
    assert first_fill["messages"][:-1] == question["messages"][:-1]


async def test_with_the_setting_off_no_words_go_ahead(tmp_path, scripted_brain, hearing, piper_voice, turn_model,
                                                      monkeypatch):
    monkeypatch.setattr(ear, "PREPARE_AFTER_MS", 60_000)
    fills, real = await _asked(tmp_path, scripted_brain, hearing, piper_voice, turn_model,
                               brain={"fill_while_speaking": False})
    assert fills == [] and "africa" in _user_words(real[-1])
