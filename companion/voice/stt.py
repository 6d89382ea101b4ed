"""Hearing: faster-whisper on the CPU (int8, beam 5) in a worker thread, with phantom filtering."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from typing import Protocol

import numpy as np

from companion.errors import CompanionError, Stage
from companion.voice.models import HearingModel

log = logging.getLogger(__name__)

# What Whisper "hears" in silence or noise; these alone are never a real utterance.
PHANTOMS = frozenset({
    "", "you", "thank you", "thanks", "thank you very much", "thanks for watching",
    "thank you for watching", "thank you so much for watching", "bye", "so", "okay", "oh",
    "uh", "um", "hmm", "mm", "ah", "the", "i", "please subscribe", "subtitles by the amaraorg community",
})


def is_phantom(text: str) -> bool:
    """True for empty text, non-speech markers like [MUSIC], and known silence hallucinations."""
    stripped = re.sub(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*", " ", text)
    normal = re.sub(r"[^a-z' ]+", " ", stripped.lower())
    normal = re.sub(r"\s+", " ", normal.replace("'", "")).strip()
    return normal in PHANTOMS


class Transcriber(Protocol):
    async def transcribe(self, audio: np.ndarray) -> str:
        """Text of 16 kHz mono float32 audio ("" when nothing was said)."""


class WhisperTranscriber:
    """Loads once (lazily), warms up, and runs one transcription at a time off the event loop."""

    def __init__(self, model: HearingModel, *, beam_size: int = 5, cpu_threads: int = 1) -> None:
        self.model_info = model
        self.beam_size = beam_size
        self.cpu_threads = cpu_threads
        self._model = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Load the model and run one warm-up pass (blocking; call from a worker thread)."""
        with self._lock:
            if self._model is not None:
                return
            from faster_whisper import WhisperModel

            try:
                self._model = WhisperModel(
                    str(self.model_info.path), device="cpu", compute_type="int8",
                    cpu_threads=self.cpu_threads,
                )
            except (RuntimeError, ValueError, OSError) as exc:
                raise CompanionError(
                    "model_unloadable", f"I couldn't load the hearing model at {self.model_info.path} ({exc}).",
                    stage=Stage.HEARING,
                ) from exc
        # The first pass allocates buffers; pay for it now rather than on the first question.
        self.transcribe_sync(np.zeros(16_000, dtype=np.float32))

    def transcribe_sync(self, audio: np.ndarray) -> str:
        if self._model is None:
            self.load()
        with self._lock:
            segments, _info = self._model.transcribe(
                audio.astype(np.float32, copy=False),
                language="en" if self.model_info.english_only else None,
                beam_size=self.beam_size,
                condition_on_previous_text=False,
                without_timestamps=True,
                vad_filter=False,
            )
            text = " ".join(segment.text.strip() for segment in segments).strip()
        return "" if is_phantom(text) else text

    async def transcribe(self, audio: np.ndarray) -> str:
        return await asyncio.to_thread(self.transcribe_sync, audio)
