"""Hearing: faster-whisper on the CPU (int8, beam 5) in a worker thread, with phantom filtering."""

from __future__ import annotations

import logging
import re
import threading
import zlib
from typing import Protocol

import numpy as np

from companion.errors import CompanionError, Stage
from companion.voice.models.files import HearingModel
from companion.voice.models.thread import TURN_CRITICAL, ModelThread

log = logging.getLogger(__name__)

_WORDS = re.compile(r"[a-z0-9']+")

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


FULL_FRAMES = 3000
"""Whisper's 30 s window in feature frames (10 ms each)."""
SHORT_MIN_FRAMES = 1000
SHORT_PAD_FRAMES = 200
REPEAT_PENALTY = 1.2
"""For the second decoding of a short window whose first one repeated itself."""
TIMESTAMPS_FROM_S = 20.0
"""Audio this long or longer is decoded with timestamps (Whisper's own way through a full window)."""
SAMPLE_RATE = 16_000


def _starts_with(text: str, names: tuple[str, ...]) -> bool:
    """One of `names` begins the text, or follows its first word ("Pip, …", "Hey Pip, …")."""
    said = _WORDS.findall(text.lower())
    for name in names:
        wanted = _WORDS.findall(name.lower())
        if wanted and wanted in (said[: len(wanted)], said[1: 1 + len(wanted)]):
            return True
    return False


def _looks_repeated(text: str) -> bool:
    """True when the text is one phrase said twice or more (a decoding loop) or compresses too well."""
    normal = re.sub(r"[^a-z0-9 ]+", "", text.lower()).split()
    for size in range(2, len(normal) // 2 + 1):
        if normal[:size] == normal[size:2 * size]:
            return True
    data = text.encode()
    return len(data) > 40 and len(data) / len(zlib.compress(data)) > 2.4


class Transcriber(Protocol):
    async def transcribe(self, audio: np.ndarray) -> str:
        """Text of 16 kHz mono float32 audio ("" when nothing was said)."""


class PartialTranscriber(Transcriber, Protocol):
    """An engine that can also transcribe while the user talks (Moonshine; her ear looks for
    `partial`). Whisper has none: its short window costs the same whatever was said."""

    async def partial(self, audio: np.ndarray) -> str | None:
        """The audio so far, to make the next `transcribe` cheaper; never the conversation's
        text. None when a `transcribe` call stopped it."""


class WhisperTranscriber:
    """Loads once (lazily), warms up, and runs one transcription at a time off the event loop."""

    def __init__(self, model: HearingModel, *, beam_size: int = 5, cpu_threads: int = 1) -> None:
        self.model_info = model
        self.beam_size = beam_size
        self.cpu_threads = cpu_threads
        self._model = None
        self._tokenizer = None
        self._suppress: list[int] = []
        self._lock = threading.Lock()
        self._thread = ModelThread("whisper", nicer_by=TURN_CRITICAL)
        self.call_names: tuple[str, ...] = ()
        """The names that may call her, while one can (voice.addressing.learning.hint_names).
        Whisper tiny.en writes an unusual name as other words ("Bibb" for Pip, "Geeves"), but
        as the name once told of it (its prompt, the text before the utterance): a short
        utterance that does not start with one of them is decoded again, told, and the told
        text is kept when it does. Told only, it drops the name now and then (its prompt "Mira."
        already said it: "Mira, what is…" → "What is…"), hence the two decodings of one encoding."""

    def load(self) -> None:
        """Load the model and run one warm-up pass (blocking; call from a worker thread)."""
        self._thread.call(self._load)

    def _load(self) -> None:
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
                    "model_unloadable", f"I couldn't load the hearing model at {self.model_info.path}: it looks "
                    f"damaged ({type(exc).__name__}). Point voice.hearing_model at a working CTranslate2 Whisper "
                    "folder or a model name like tiny.en, or leave it empty to use the installed one.",
                    stage=Stage.HEARING,
                ) from exc
        # The first pass allocates buffers; pay for it now rather than on the first question.
        self.transcribe_sync(np.zeros(16_000, dtype=np.float32))

    def transcribe_sync(self, audio: np.ndarray) -> str:
        if self._model is None:
            self.load()
        audio = audio.astype(np.float32, copy=False)
        with self._lock:
            text = self._transcribe_short(audio) if self.model_info.english_only else None
            if text is None:
                text = self._transcribe_full(audio)
        return "" if is_phantom(text) else text

    def _transcribe_short(self, audio: np.ndarray) -> str | None:
        """Encode only the audio plus some padding instead of a full 30 s window.

        faster-whisper always pads to 30 s, and the encoder is most of the cost: measured on
        the 2-core machine, 0.67 s → 0.12 s for a short question with the same words on 24 of
        26 test phrases. A minimum context of 10 s keeps the decoder from repeating itself
        most of the time; when it still does ("Good morning. Good morning." for one "Good
        morning."), one more decoding of the same encoding with a repetition penalty gives
        the words (+110-180 ms, where the 30 s path took 570). Anything still repeated, or a
        long utterance, takes the standard path.
        """
        import ctranslate2

        model = self._model
        features = model.feature_extractor(audio)
        frames = features.shape[1]
        context = max(SHORT_MIN_FRAMES, -(-(frames + SHORT_PAD_FRAMES) // 100) * 100)
        if context >= FULL_FRAMES:
            return None
        features = np.pad(features, ((0, 0), (0, context - frames)))[:, :context]
        encoded = model.model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])))
        text = self._decode_short(encoded)
        names = self.call_names
        if names and text is not None and not _starts_with(text, names):
            told = self._decode_short(encoded, told=f"{', '.join(names)}.")
            if told is not None and _starts_with(told, names):
                log.debug("told her names, the hearing wrote %r for %r", told, text)
                return told
        return text

    def _decode_short(self, encoded, told: str = "") -> str | None:
        for penalty in (1.0, REPEAT_PENALTY):
            text = self._decode(encoded, penalty, told)
            if not _looks_repeated(text):
                return text
            log.debug("the short decoding repeated itself (penalty %.1f): %r", penalty, text)
        return None

    def _decode(self, encoded, repetition_penalty: float, told: str = "") -> str:
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        if self._tokenizer is None:
            self._tokenizer = Tokenizer(self._model.hf_tokenizer, False, task="transcribe", language="en")
            self._suppress = list(get_suppressed_tokens(self._tokenizer, [-1]))
        tokenizer = self._tokenizer
        before = [tokenizer.sot_prev, *tokenizer.encode(" " + told)] if told else []
        result = self._model.model.generate(
            encoded, [[*before, *tokenizer.sot_sequence, tokenizer.no_timestamps]], beam_size=self.beam_size,
            max_length=224, suppress_blank=True, suppress_tokens=self._suppress,
            repetition_penalty=repetition_penalty, return_scores=True, return_no_speech_prob=True,
        )[0]
        tokens = result.sequences_ids[0]
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        # Whisper's own silence rule: probably no speech and not confidently decoded.
        if result.no_speech_prob > 0.6 and avg_logprob < -1.0:
            return ""
        return tokenizer.decode(tokens).strip()

    def _transcribe_full(self, audio: np.ndarray) -> str:
        segments, _info = self._model.transcribe(
            audio,
            language="en" if self.model_info.english_only else None,
            beam_size=self.beam_size,
            condition_on_previous_text=False,
            # A window nearly full of speech decoded without timestamps stops early: 30 s of a
            # woman reading on gave 7 words, with them 67 (the same 28 s gave 64 either way).
            without_timestamps=audio.size < TIMESTAMPS_FROM_S * SAMPLE_RATE,
            vad_filter=False,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()

    async def transcribe(self, audio: np.ndarray) -> str:
        return await self._thread.run(self.transcribe_sync, audio)
