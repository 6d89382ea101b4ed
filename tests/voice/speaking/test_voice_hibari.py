"""hibari's heart as her voice (Mira's): behind the same interface as piper (sentences, her mouth's
levels, cancelling), her pitch moved without her pace, and Joe standing in, with a sentence, when
the voice can't be had (issue 54)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from audio_env import hibari_voice_fixture  # noqa: F401 (the hibari_voice fixture)
from voice_pitch import median_pitch_hz

from companion.config import VoiceSettings
from companion.voice.factory import make_synthesizer
from companion.voice.models import files
from companion.voice.sound.audio import WavSink
from companion.voice.speaking.speaker import Speaker
from companion.voice.speaking.tts import PiperSynthesizer

SENTENCE = "I have looked through your notes, and two questions are still open."


async def test_her_hibari_voice_speaks_sentence_by_sentence_and_moves_her_mouth(hibari_voice):
    assert hibari_voice.sample_rate == 24_000
    sink = WavSink(lambda: 0.0, rate=hibari_voice.sample_rate)
    levels: list[float] = []
    sink.add_level_listener(levels.append)
    speaker = Speaker(hibari_voice, sink)
    played: list[str] = []
    speaker.on_playing = lambda line: played.append(line.text)
    speaker.say("Hello there.")
    speaker.say("Nice to meet you.")
    await speaker.idle.wait()
    await speaker.close()
    assert played == ["Hello there.", "Nice to meet you."]
    assert max(levels) > 0.05 and levels[-1] == 0.0  # her mouth moves with the words and closes after
    assert median_pitch_hz(sink.audio(), sink.rate) > 160  # a woman's voice (Joe's is ~90 Hz)


async def test_cancelling_her_hibari_voice_cuts_the_line_and_drops_the_rest(hibari_voice):
    sink = WavSink(lambda: 0.0, rate=hibari_voice.sample_rate, realtime=True)
    speaker = Speaker(hibari_voice, sink)
    playing = asyncio.Event()
    speaker.on_playing = lambda line: playing.set()
    for line in ("This first sentence is fairly long to say.", "Second one.", "Third one."):
        speaker.say(line)
    await playing.wait()
    speaker.cancel()
    await speaker.idle.wait()
    await speaker.close()
    assert sink.audio().size < 0.5 * sink.rate


@pytest.mark.parametrize(("engine", "semitones"), [("hibari", 4.0), ("hibari", -2.0), ("piper", 4.0),
                                                  ("piper", -2.0)])
def test_a_pitch_in_semitones_moves_her_pitch_and_keeps_her_pace(hibari_voice, piper_voice, engine, semitones):
    voice = hibari_voice if engine == "hibari" else piper_voice
    own = voice.synthesize_sync(SENTENCE)
    voice.pitch = semitones
    try:
        moved = voice.synthesize_sync(SENTENCE)
    finally:
        voice.pitch = 0.0
    ratio = median_pitch_hz(moved, voice.sample_rate) / median_pitch_hz(own, voice.sample_rate)
    assert ratio == pytest.approx(2 ** (semitones / 12), rel=0.06)
    # The pace within a few percent (measured 0.90-1.08): an engine's pauses don't scale with its speed.
    assert moved.size == pytest.approx(own.size, rel=0.12)


def _without_hibari(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(files.importlib.util, "find_spec",
                        lambda name, *args: None if name == files.HIBARI_PACK else real(name, *args))


def test_without_the_hibari_package_her_voice_is_joe_at_her_pitch_and_she_says_why(monkeypatch, tmp_path):
    _without_hibari(monkeypatch)
    voice = make_synthesizer(VoiceSettings(voice="hibari/heart", pitch=2.0), tmp_path)
    assert isinstance(voice, PiperSynthesizer) and voice.pitch == 2.0
    assert voice.take_notice() == ("The voice hibari/heart isn't installed (install it with: pip install "
                                   "hibari-tts==0.2.1). Until then I'm speaking with Joe's voice.")
    assert voice.take_notice() is None  # said once
    assert np.abs(voice.synthesize_sync("Hello.")).max() > 0.05  # never silence


def test_a_damaged_hibari_voice_file_is_joe_with_a_sentence(monkeypatch, tmp_path):
    assets = tmp_path / "hibari" / "assets"
    assets.mkdir(parents=True)
    (assets / "hibari.onnx").write_bytes(b"not the model")
    spec = importlib.util.spec_from_file_location("hibari", tmp_path / "hibari" / "__init__.py",
                                                  submodule_search_locations=[str(tmp_path / "hibari")])
    real = importlib.util.find_spec
    monkeypatch.setattr(files.importlib.util, "find_spec",
                        lambda name, *args: spec if name == files.HIBARI_PACK else real(name, *args))
    voice = make_synthesizer(VoiceSettings(voice="hibari/heart"), tmp_path)
    assert isinstance(voice, PiperSynthesizer)
    assert "hibari.onnx is damaged" in voice.take_notice()


def test_a_hibari_voice_that_would_need_a_download_is_refused_by_name(tmp_path):
    with pytest.raises(files.CompanionError, match=r"hibari has no voice 'emma' on this computer: only "
                                                    r"hibari/heart comes with it"):
        files.resolve_hibari("hibari/emma")
    assert files.missing_models(VoiceSettings(voice="hibari/heart"), tmp_path) == []  # never offered a download


def test_the_packaged_heart_is_verified_and_found_without_importing_hibari(tmp_path):
    model = files.resolve_voice("hibari/heart", tmp_path)
    assert (model.engine, model.name, model.onnx.name) == ("hibari", "hibari/heart", "hibari.onnx")
    assert Path(model.onnx).is_file()


async def test_another_voice_taken_in_place_speaks_the_next_line_at_the_speakers_own_rate(piper_voice, hibari_voice):
    """A personality with another voice: her running speaker and cached lines take it (no restart of
    her hearing); hibari's 24 kHz audio comes resampled to the rate the speaker opened with."""
    from companion.voice.speaking.narration_cache import NarrationCache
    from companion.voice.speaking.resampled import ResampledVoice

    sink = WavSink(lambda: 0.0, rate=piper_voice.sample_rate)
    cache = NarrationCache(piper_voice)
    await cache.refresh(["Let me look."])
    speaker = Speaker(piper_voice, sink, cache)
    speaker.say("Hello there.")
    await speaker.idle.wait()
    joe = sink.audio().size
    hers = ResampledVoice(hibari_voice, piper_voice.sample_rate)
    speaker.use_voice(hers)
    cache.use_voice(hers)
    assert len(cache) == 0  # Joe's lines are not said in her voice
    speaker.say("Nice to meet you.")
    await speaker.idle.wait()
    await speaker.close()
    mira = sink.audio()[joe:]
    assert median_pitch_hz(mira, sink.rate) > 160  # her voice, at the speaker's rate
    expected = hibari_voice.synthesize_sync("Nice to meet you.").size * sink.rate / hibari_voice.sample_rate
    assert abs(mira.size - expected) < 0.05 * sink.rate


async def test_her_voice_session_says_once_that_joe_stands_in_for_a_missing_hibari(monkeypatch, tmp_path, hearing):
    from types import SimpleNamespace

    from companion.events import EventBus, Speak
    from companion.turns import TurnOwner
    from companion.voice.session import VoiceSession
    from companion.voice.sound.audio import NullSource

    _without_hibari(monkeypatch)
    voice = make_synthesizer(VoiceSettings(voice="hibari/heart"), tmp_path)
    bus = EventBus()
    said: list[str] = []
    bus.subscribe(lambda event: said.append(event.text) if isinstance(event, Speak) else None)
    brain = SimpleNamespace(turns=TurnOwner(bus), keep_heard=lambda _turn, _heard: None,
                            hold_notices=lambda _hold: None)  # never asked anything here
    session = VoiceSession(brain=brain, bus=bus, source=NullSource(), sink=WavSink(lambda: 0.0),
                           transcriber=hearing, synthesizer=voice, voice=VoiceSettings())
    try:
        assert said == ["The voice hibari/heart isn't installed (install it with: pip install hibari-tts==0.2.1). "
                        "Until then I'm speaking with Joe's voice."]
    finally:
        await session.close()
