"""Her own hearing engine for a resolved model: Whisper, or Moonshine when the model is one."""

from __future__ import annotations

from pathlib import Path

from companion.voice.hearing.stt import Transcriber, WhisperTranscriber
from companion.voice.models.files import HearingModel


def local_transcriber(model: HearingModel, cache_dir: Path) -> Transcriber:
    """The engine for a resolved hearing model (not loaded yet): Whisper or Moonshine."""
    if model.engine == "moonshine":
        from companion.voice.hearing.moonshine import MoonshineTranscriber

        return MoonshineTranscriber(model, cache_dir)
    return WhisperTranscriber(model)
