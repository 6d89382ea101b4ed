"""What a voice decides: is this the voice that called her, a voice she knows, or another?

`Voices` is the one object the voice loop holds: it keeps the last half-minute of audio
(RecentAudio, fed by the ear), embeds an utterance only when a decision asks for it (on the
encoder's own thread, never on the event loop or the ear's frame path, and at most once per
utterance), remembers the caller's voice for the follow-up window, and learns the user's voice
from the calls (Enrolment). Every answer says "can't tell" (None) when there is too little
audio or no model: the caller then decides as she did before she knew voices.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from companion.errors import CompanionError
from companion.voice.voiceprint.encoder import SpeakerEncoder
from companion.voice.voiceprint.enrolment import Enrolment, is_sure
from companion.voice.voiceprint.recent import RecentAudio
from companion.voice.voiceprint.store import VoiceprintStore

__all__ = ["KNOWN_THRESHOLD", "PAIR_THRESHOLD", "Voices", "VoiceMatch"]

log = logging.getLogger(__name__)

KNOWN_THRESHOLD = 0.70
"""Cosine between an utterance and a print's centroid above which it is that voice (bench/speaker_id.py,
whole turns of 2-6 s against prints of up to 30 s; 2026-12-07). Equal error: people from separate
recordings 5.2 % (0.2 % with full 30 s prints), the same people through one simulated room 11 %
(8.5 %); at this threshold 0 and 3.1 % false accepts. The rejects are one man recorded with a cold,
in falsetto and in another room. Through one telephone line every voice sounds alike to this
encoder: the two women of one phone call are beyond it (50 %)."""
PAIR_THRESHOLD = 0.62
"""Cosine between two single turns above which they are one voice (the caller's and a follow-up's).
Equal error: separate recordings 7.0 %, one simulated room 12.8 %; synthetic voices of distinct
bases 4 / 1 % false accepts / rejects (older figures, 1-3 s utterances)."""
PAD_BEFORE_S = 0.3
PAD_AFTER_S = 0.15
"""An utterance's times are where the VAD was sure of speech: its first syllable starts earlier
(Joe's 1.4 s question was timed as 1.2 s, and scored 0.70 against his print instead of 0.77)."""
_CACHED = 16


@dataclass(frozen=True)
class VoiceMatch:
    """Who spoke an utterance: the print's name (None: nobody she knows) and the best score."""

    name: str | None
    score: float


class Voices:
    def __init__(self, encoder: SpeakerEncoder, store: VoiceprintStore, *, learn: bool = True,
                 known_threshold: float = KNOWN_THRESHOLD, pair_threshold: float = PAIR_THRESHOLD) -> None:
        self.encoder = encoder
        self.store = store
        self.recent = RecentAudio()
        self.known_threshold = known_threshold
        self.pair_threshold = pair_threshold
        self.enrolment = Enrolment(store, known_threshold)
        self.learn = learn
        """Learn the caller's voice from the calls (the user said yes to knowing voices)."""
        self.embedded = 0
        """How many utterances were embedded (each costs ~100-150 ms on the encoder's thread)."""
        self._cache: OrderedDict[tuple[float, float], asyncio.Future] = OrderedDict()
        self._caller: tuple[float, float] | None = None
        self._failed = False

    # --- the ear's door ---------------------------------------------------------------------
    def hear(self, frame: np.ndarray, stream_s: float) -> None:
        self.recent.hear(frame, stream_s)

    # --- embeddings, on demand ----------------------------------------------------------------
    async def voice_of(self, start_s: float, end_s: float) -> np.ndarray | None:
        """The utterance's embedding (None: too short, or no model). Embedded once, off the loop."""
        key = (round(start_s, 3), round(end_s, 3))
        future = self._cache.get(key)
        if future is None:
            if self._failed:
                return None
            audio = self.recent.audio(start_s - PAD_BEFORE_S, end_s + PAD_AFTER_S)
            future = asyncio.ensure_future(self._embed(audio))
            self._cache[key] = future
            while len(self._cache) > _CACHED:
                self._cache.popitem(last=False)
        return await asyncio.shield(future)

    async def _embed(self, audio: np.ndarray) -> np.ndarray | None:
        try:
            embedding = await self.encoder.embed(audio)
        except CompanionError as exc:
            self._failed = True
            log.warning("voice: %s I decide without voices.", exc.sentence)
            return None
        if embedding is not None:
            self.embedded += 1
            log.debug("voice: embedded %.1f s in %.0f ms", audio.size / 16_000, self.encoder.last_ms)
        return embedding

    # --- what is known ------------------------------------------------------------------------
    @property
    def enrolled(self) -> bool:
        """Someone's voice is known surely enough to go by."""
        return any(is_sure(p) for p in self.store.current().values())

    def match(self, embedding: np.ndarray) -> VoiceMatch:
        """The known voice nearest to `embedding`, if near enough (only prints she is sure of)."""
        best = VoiceMatch(None, -1.0)
        for voiceprint in self.store.current().values():
            centroid = voiceprint.centroid()
            if centroid is None or not is_sure(voiceprint):
                continue
            score = float(centroid @ embedding)
            if score > best.score:
                best = VoiceMatch(voiceprint.name if score >= self.known_threshold else None, score)
        return best

    async def known(self, start_s: float, end_s: float) -> VoiceMatch | None:
        """Whose known voice spoke from `start_s` to `end_s`; None: she can't tell (nobody
        enrolled surely, too little audio, no model)."""
        if not self.enrolled:
            return None
        embedding = await self.voice_of(start_s, end_s)
        return None if embedding is None else self.match(embedding)

    # --- the caller ---------------------------------------------------------------------------
    def called_by(self, start_s: float, end_s: float) -> None:
        """The utterance from `start_s` to `end_s` called her: its voice owns the follow-up
        window. Embedded now in the background (the window and the learning depend on it)."""
        self._caller = (start_s, end_s)
        if self.learn or self.enrolled:
            asyncio.ensure_future(self._learn(start_s, end_s))

    def followed_up(self, start_s: float, end_s: float) -> None:
        """A follow-up in the caller's voice: more of it to learn from."""
        if self.learn:
            asyncio.ensure_future(self._learn(start_s, end_s))

    async def _learn(self, start_s: float, end_s: float) -> None:
        try:
            embedding = await self.voice_of(start_s, end_s)
            if self.learn and embedding is not None:
                self.enrolment.learn(embedding, end_s - start_s)
        except asyncio.CancelledError:
            raise
        except Exception:  # a background task: said in the log, never lost as "never retrieved"
            log.exception("voice: learning from a call failed")

    async def same_as_caller(self, start_s: float, end_s: float) -> tuple[bool | None, float]:
        """Is the utterance in the voice that opened the window? (None: can't tell) and the score."""
        if self._caller is None:
            return None, 0.0
        caller = await self.voice_of(*self._caller)
        voice = await self.voice_of(start_s, end_s)
        if caller is None or voice is None:
            return None, 0.0
        score = float(caller @ voice)
        if score >= self.pair_threshold:
            return True, score
        # Two short utterances of one voice can differ more than an utterance and a print:
        # both in one known voice is the same voice too.
        if self.enrolled:
            first, second = self.match(caller), self.match(voice)
            if first.name is not None and first.name == second.name:
                return True, second.score
        return False, score

    def close(self) -> None:
        for future in self._cache.values():
            future.cancel()
        self._cache.clear()
