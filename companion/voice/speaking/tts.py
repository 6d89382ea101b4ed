"""Speaking: her own engines turn one sentence at a time into audio, in a worker thread, at a chosen
speed, variation and pitch (so each personality can sound like herself): piper here, hibari in
voice.speaking.hibari_voice, both behind `LocalSynthesizer`."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Protocol

import numpy as np

from companion.errors import CompanionError, Stage
from companion.voice.models.files import VoiceModel
from companion.voice.models.thread import TURN_CRITICAL, ModelThread
from companion.voice.speaking.pitch import render_speed, shift

log = logging.getLogger(__name__)

QUIET_BEFORE_S = 1.0
"""A text asked for after this long without synthesis is the first of a reply (the user waits
for it): it runs at the window's priority. The rest of a reply, synthesized while she already
speaks, runs below it so her face keeps its frame rate (companion.voice.models.thread)."""


class Synthesizer(Protocol):
    sample_rate: int

    async def synthesize(self, text: str) -> np.ndarray:
        """float32 mono audio at `sample_rate` for `text`."""


class LocalSynthesizer:
    """A voice on this computer, loaded once: the threads it runs on, her speed, variation and
    pitch. An engine gives `_open` (load its model) and `_render` (one text at a speed)."""

    sample_rate: int = 22_050
    engine = ""
    """Which engine this is ("piper", "hibari"): doctor and Settings name it."""

    def __init__(self, model: VoiceModel, *, speed: float = 1.0,
                 variation: tuple[float | None, float | None] = (None, None), pitch: float = 0.0,
                 steady: bool = False) -> None:
        self.model_info = model
        self.speed = speed
        """2.0 talks twice as fast."""
        self.variation = variation
        """How much her tone and her rhythm vary, None for the voice's own (VoiceSettings.variation)."""
        self.pitch = pitch
        """Semitones above (below, negative) the voice's own (voice.speaking.pitch)."""
        self.steady = steady
        """No sampling noise: the same text gives the same audio every time (tests, benchmarks)."""
        self.notice: str | None = None
        """A sentence she says once when her voice is up (the voice she stands in for was missing)."""
        self._voice = None
        self._lock = threading.Lock()
        self._thread = ModelThread(self.engine or "voice")
        self._first = ModelThread(f"{self.engine or 'voice'}-first", nicer_by=TURN_CRITICAL)
        self._done_at = 0.0
        self._in_flight = 0
        self.first_count = 0
        """How many texts were synthesized as the first of a reply, at the window's priority."""
        self.synth_count = 0
        """How many texts were synthesized (the narration cache test checks it stays put)."""

    def take_notice(self) -> str | None:
        """The notice, once (voice.session says it when her voice is up)."""
        notice, self.notice = self.notice, None
        return notice

    def load(self) -> None:
        """Load the voice and synthesize once to warm it (blocking)."""
        self._thread.call(self._load)

    def _load(self) -> None:
        with self._lock:
            if self._voice is not None:
                return
            self._voice = self._open()
        self.synthesize_sync("Hello.")
        self.synth_count = 0

    def _open(self):
        raise NotImplementedError

    def _render(self, text: str, speed: float) -> np.ndarray:
        """`text` at `speed` (called holding the lock, the voice loaded)."""
        raise NotImplementedError

    def synthesize_sync(self, text: str) -> np.ndarray:
        if self._voice is None:
            self.load()
        pitch = self.pitch
        with self._lock:
            self.synth_count += 1
            audio = self._render(text, render_speed(self.speed, pitch))
        return shift(audio.astype(np.float32, copy=False), pitch, self.sample_rate)

    async def synthesize(self, text: str) -> np.ndarray:
        first = self._in_flight == 0 and time.monotonic() - self._done_at > QUIET_BEFORE_S
        self.first_count += first
        self._in_flight += 1
        try:
            return await (self._first if first else self._thread).run(self.synthesize_sync, text)
        finally:
            self._in_flight -= 1
            self._done_at = time.monotonic()


def _open_voice(model: VoiceModel, config: dict):
    """The piper voice (`config`: its parsed .onnx.json) on an onnxruntime session without
    the CPU memory arena: the arena keeps the peak of every synthesis (about 140 MB after a
    long sentence) for the rest of the day, for ~10% longer synthesis of long sentences and
    none for short ones."""
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig

    options = onnxruntime.SessionOptions()
    options.enable_cpu_mem_arena = False
    session = onnxruntime.InferenceSession(str(model.onnx), sess_options=options,
                                           providers=["CPUExecutionProvider"])
    return PiperVoice(session=session, config=PiperConfig.from_dict(config))


class PiperSynthesizer(LocalSynthesizer):
    """A piper voice; `speed` divides its length_scale; `variation` is piper's (noise_scale,
    noise_w_scale)."""

    engine = "piper"

    def __init__(self, model: VoiceModel, **options) -> None:
        super().__init__(model, **options)
        try:
            config = json.loads(model.config.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CompanionError(
                "model_corrupt", f"The voice config {model.config.name} can't be read ({exc}).",
                stage=Stage.SPEAKING,
            ) from exc
        self._config = config
        self.sample_rate = int(config.get("audio", {}).get("sample_rate", 22_050))
        self._base_length_scale = float(config.get("inference", {}).get("length_scale", 1.0))

    def _open(self):
        try:
            return _open_voice(self.model_info, self._config)
        except Exception as exc:  # onnxruntime raises its own types for a bad file
            raise CompanionError(
                "model_unloadable", f"I couldn't load the voice {self.model_info.name}: the file looks damaged "
                f"({type(exc).__name__}). Point voice.voice at a working piper .onnx voice, or leave it "
                "empty to use the installed one.",
                stage=Stage.SPEAKING,
            ) from exc

    def _render(self, text: str, speed: float) -> np.ndarray:
        from piper import SynthesisConfig

        noise_scale, noise_w_scale = self.variation
        config = SynthesisConfig(length_scale=self._base_length_scale / speed,
                                 noise_scale=noise_scale, noise_w_scale=noise_w_scale)
        if self.steady:
            config.noise_scale = config.noise_w_scale = 0.0
        chunks = [chunk.audio_float_array for chunk in self._voice.synthesize(text, syn_config=config)]
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(chunks)
