"""Semantic end of turn: Smart Turn v3 hears from the last 8 s of speech whether the user has finished.

The model (ONNX, ~8.7 MB, BSD-2, by Daily) comes inside the `pipecat-ai` wheel, installed
without its dependencies (we only read the file; pipecat's code is never imported). Its input
is Whisper's 80-bin log-mel features of exactly 8 s of 16 kHz audio, zero-padded at the front,
computed with faster-whisper's feature extractor on the normalised waveform; its output is the
probability that the turn is complete.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from companion.errors import CompanionError, Stage
from companion.voice.models.checksums import PackagedFile, resolve_packaged_file
from companion.voice.models.thread import TURN_CRITICAL, ModelThread
from companion.voice.turns.text_turn import TextTurn, shared_text_model

log = logging.getLogger(__name__)

TURN_PACK = "pipecat-ai"
TURN_PACK_VERSION = "1.14.0"
TURN_MODEL_FILE = "smart-turn-v3.2-cpu.onnx"
TURN_MODEL_IN_PACK = f"pipecat/audio/turn/smart_turn/data/{TURN_MODEL_FILE}"
TURN_MODEL_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
INSTALL_HINT = f"pip install --no-deps {TURN_PACK}=={TURN_PACK_VERSION}"
PATH_VARIABLE = "COMPANION_TURN_MODEL"
PACKAGED = PackagedFile(TURN_PACK, TURN_PACK_VERSION, TURN_MODEL_IN_PACK, TURN_MODEL_SHA256, "turn model",
                        "Smart Turn v3", PATH_VARIABLE, INSTALL_HINT)
"""Points at a copy of the same file elsewhere (it is verified all the same)."""

WINDOW_S = 8
SAMPLE_RATE = 16_000
_WINDOW = WINDOW_S * SAMPLE_RATE
_NORMALISE_EPS = 1e-7
"""Zero-mean unit-variance waveform normalisation, as the model was trained (Whisper's do_normalize)."""


def resolve_turn_model(path: Path | None = None) -> Path:
    """The Smart Turn file (a path, else $COMPANION_TURN_MODEL, else the installed pack), verified
    by SHA-256.

    Raises CompanionError with a sentence saying what to do when it is missing or damaged.
    """
    return resolve_packaged_file(PACKAGED, path)


@dataclass(frozen=True)
class TurnGuess:
    """One answer of the model: the probability the user has finished, and what it cost."""

    probability: float
    ms: float


class SmartTurn:
    """Smart Turn v3 in onnxruntime on one CPU thread; one inference at a time, off the event loop."""

    def __init__(self, path: Path, *, threads: int = 1) -> None:
        self.path = path
        self.threads = threads
        self._session = None
        self._features = None
        self._lock = threading.Lock()
        self._thread = ModelThread("smart-turn", nicer_by=TURN_CRITICAL)
        self.text: TextTurn | None = None
        """The words' model the sound is weighed with (turn_end.TurnJudge); None: the words by rule alone."""

    def load(self) -> None:
        """Open the model and run it once (blocking; the first run allocates its buffers)."""
        self._thread.call(self._load)

    def _load(self) -> None:
        with self._lock:
            if self._session is None:
                import onnxruntime
                from faster_whisper.feature_extractor import FeatureExtractor

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
                options.enable_cpu_mem_arena = False  # it would keep each decision's peak for good
                try:
                    self._session = onnxruntime.InferenceSession(
                        str(self.path), sess_options=options, providers=["CPUExecutionProvider"])
                except Exception as exc:  # onnxruntime raises its own types for a bad file
                    raise CompanionError(
                        "model_unloadable", f"I couldn't load the turn model at {self.path} "
                        f"({type(exc).__name__}). Reinstall it with: {INSTALL_HINT}",
                        stage=Stage.HEARING,
                    ) from exc
                self._features = FeatureExtractor(chunk_length=WINDOW_S)
        self.guess_sync(np.zeros(SAMPLE_RATE, dtype=np.float32))

    def features(self, audio: np.ndarray) -> np.ndarray:
        """(1, 80, 800) log-mel features of the last 8 s of `audio` (16 kHz mono float)."""
        tail = np.asarray(audio, dtype=np.float32)[-_WINDOW:]
        window = np.pad(tail, (_WINDOW - tail.size, 0))
        window = (window - window.mean()) / np.sqrt(window.var() + _NORMALISE_EPS)
        # padding=0: exactly 8 s in; Whisper's extractor drops the trailing frame → 800 frames.
        mel = self._features(window, padding=0)
        return np.ascontiguousarray(mel[None, :, : WINDOW_S * 100], dtype=np.float32)

    def guess_sync(self, audio: np.ndarray) -> TurnGuess:
        if self._session is None:
            self.load()
        started = time.perf_counter()
        with self._lock:
            [probabilities] = self._session.run(None, {"input_features": self.features(audio)})
        return TurnGuess(float(probabilities.reshape(-1)[0]), (time.perf_counter() - started) * 1000)

    async def guess(self, audio: np.ndarray) -> TurnGuess:
        return await self._thread.run(self.guess_sync, audio)


def load_turn_model(path: Path | None = None, *, words: bool = True) -> tuple[SmartTurn | None, str]:
    """The loaded turn model, or None and the sentence saying why she falls back to a fixed silence.
    `words`: the words' language model comes with it, loading in the background (text_turn.py)."""
    try:
        model = SmartTurn(resolve_turn_model(path))
        model.load()
    except CompanionError as exc:
        log.warning("no semantic end of turn: %s", exc.sentence)
        return None, exc.sentence
    if words:
        model.text = shared_text_model()
    return model, ""
