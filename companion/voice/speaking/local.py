"""Her own voice for the settings: piper or hibari by the voice named, and Joe when a hibari voice
can't be had (she says so once: never silence)."""

from __future__ import annotations

import logging
from pathlib import Path

from companion.config import VoiceSettings
from companion.errors import CompanionError
from companion.voice.models.download import Progress
from companion.voice.models.files import VoiceModel, is_hibari, resolve_voice
from companion.voice.speaking.tts import LocalSynthesizer, PiperSynthesizer

log = logging.getLogger(__name__)


def local_synthesizer(model: VoiceModel, **options) -> LocalSynthesizer:
    """The engine for a resolved voice (not loaded yet); `options` as LocalSynthesizer takes them."""
    if model.engine == "hibari":
        from companion.voice.speaking.hibari_voice import HibariSynthesizer

        return HibariSynthesizer(model, **options)
    return PiperSynthesizer(model, **options)


def voice_options(voice: VoiceSettings) -> dict:
    """Her speed, variation and pitch as a synthesizer takes them."""
    return {"speed": voice.speed, "variation": voice.variation, "pitch": voice.pitch}


def load_voice(voice: VoiceSettings, cache_dir: Path, *, progress: Progress | None = None) -> LocalSynthesizer:
    """Her voice as `voice` names it, loaded and warmed (blocking: call from a worker thread).

    A hibari voice whose package is missing or damaged becomes the installed piper voice (Joe)
    at her speed and pitch, with a `notice` saying why; anything else wrong raises CompanionError.
    """
    try:
        engine = local_synthesizer(resolve_voice(voice.voice, cache_dir, progress=progress), **voice_options(voice))
        engine.load()
        return engine
    except CompanionError as exc:
        if not is_hibari(voice.voice):
            raise
        log.warning("voice %s unavailable, Joe stands in: %s", voice.voice, exc.sentence)
        why = exc.sentence
    engine = PiperSynthesizer(resolve_voice("", cache_dir, progress=progress), **voice_options(voice))
    engine.load()
    engine.notice = f"{why} Until then I'm speaking with Joe's voice."
    return engine
