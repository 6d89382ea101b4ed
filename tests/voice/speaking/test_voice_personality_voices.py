"""Mira, Jeeves and Pip share the one packaged piper voice, but not its pace or liveliness: their
`speed:` and `variation:` reach piper, and the real model's audio shows it (issue 37)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from companion.config import VoiceSettings
from companion.persona import parse_personality
from companion.voice.models.files import resolve_voice
from companion.voice.speaking.tts import PiperSynthesizer

ROOT = Path(__file__).resolve().parents[3]
TEXT = "Good afternoon. I have looked through your notes, and two questions are still open."
FILES = {"Mira": "default.md", "Jeeves": "butler.md", "Pip": "gremlin.md"}


def _voice(name: str) -> VoiceSettings:
    """Her voice settings as the runtime makes them: Settings' defaults, her personality filling in."""
    personality, problems = parse_personality((ROOT / "personality" / FILES[name]).read_text(encoding="utf-8"))
    assert problems == []
    return VoiceSettings().with_personality_voice(personality.voice, personality.speed, personality.variation)


def test_each_personality_speaks_at_her_own_pace(piper_voice):
    # piper_voice is steady (no sampling noise), so the durations differ by speed alone.
    seconds = {}
    try:
        for name in FILES:
            piper_voice.speed = _voice(name).speed
            seconds[name] = piper_voice.synthesize_sync(TEXT).size / piper_voice.sample_rate
    finally:
        piper_voice.speed = 1.0
    # Measured on joe-medium: Mira 4.04 s, Jeeves 4.25 s (+5 %), Pip 3.80 s (-6 %).
    assert seconds["Jeeves"] > 1.03 * seconds["Mira"], seconds
    assert seconds["Pip"] < 0.97 * seconds["Mira"], seconds


@pytest.fixture(scope="module", name="voice_model")
def voice_model_fixture(tmp_path_factory):
    return resolve_voice("", tmp_path_factory.mktemp("models"))


def _seeded(model, voice: VoiceSettings) -> np.ndarray:
    """`TEXT` in `voice`, with piper's sampling noise drawn from a fixed seed (onnxruntime seeds
    the model's random nodes when its session is made), so only the settings can differ."""
    onnxruntime.set_seed(37)
    synthesizer = PiperSynthesizer(model, speed=voice.speed, variation=voice.variation)
    synthesizer.load()
    return synthesizer.synthesize_sync(TEXT)


def test_each_personality_has_her_own_variation(voice_model):
    # At one speed, so that only variation differs between them.
    voices = {name: replace(_voice(name), speed=1.0) for name in FILES}
    assert len({voice.variation for voice in voices.values()}) == 3
    mira = _seeded(voice_model, voices["Mira"])
    assert np.array_equal(_seeded(voice_model, voices["Mira"]), mira)  # the same settings: the same audio
    for name in ("Jeeves", "Pip"):
        other = _seeded(voice_model, voices[name])
        assert other.size != mira.size or not np.allclose(other, mira, atol=1e-3), name
