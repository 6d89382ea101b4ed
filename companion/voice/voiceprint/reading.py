"""Learning a voice from sentences read aloud (Settings → Voice → Learn my voice…).

`Reading.run(source)` reads microphone frames, finds each sentence the person reads (the VAD:
speech, then a pause), embeds it on the encoder's thread and, once enough is heard to be sure
(enrolment.SURE_UTTERANCES and SURE_SECONDS), keeps the print under the person's name, in place
of any print of that name before. Progress (the level of each frame, the sentence to read, how
many are done) goes to `on_progress` on the loop's thread. No audio is kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from companion.voice.hearing.vad import SileroVad, SpeechDetector
from companion.voice.sound.audio import AudioSource
from companion.voice.sound.frames import FRAME_S, rms
from companion.voice.voiceprint.encoder import SpeakerEncoder
from companion.voice.voiceprint.enrolment import SURE_SECONDS, SURE_UTTERANCES
from companion.voice.voiceprint.store import VoiceprintStore

__all__ = ["SENTENCES", "Reading", "ReadingProgress", "open_microphone"]

log = logging.getLogger(__name__)

SENTENCES = (
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Please remind me to water the plants on the balcony tomorrow morning.",
    "I would like a cup of tea with a little milk and no sugar, thank you.",
    "Seven bright yellow kites were flying high above the quiet green hills.",
    "Could you read me the weather forecast for the weekend, and the news after it?",
    "She sells sea shells by the sea shore, and the shells she sells are surely sea shells.",
    "My favourite book is the one about the old sailor and the long voyage home.",
    "When the train arrives, call me so that I can meet you at the station.",
)
"""Plain sentences of about three seconds each, with most of English's sounds between them."""
SPEECH_START = 0.5
SPEECH_GOES_ON = 0.35
PAUSE_S = 0.7
"""A sentence ends at this much quiet after speech."""
MIN_SENTENCE_S = 1.0
"""Less than this is a cough or a false start, not a sentence read."""
LEAD_S = 0.3
"""Kept from before the VAD was sure of speech (its first syllable starts earlier)."""


@dataclass(frozen=True)
class ReadingProgress:
    level: float
    """The latest frame's level (RMS, 0..1) for the meter."""
    sentence: str
    """What to read now ("" once done)."""
    done: int
    """Sentences heard and learned so far."""
    needed: int
    """Sentences to read in all (more are asked for when they were short)."""
    seconds: float
    """Speech learned so far."""
    finished: bool = False
    note: str = ""
    """A sentence for the person ("Didn't catch that: read it again a bit louder")."""


class Reading:
    """One person's reading: their `name`, the `store` the print goes to, the `encoder`."""

    def __init__(self, store: VoiceprintStore, encoder: SpeakerEncoder, name: str, *,
                 vad: SpeechDetector | None = None, sentences: tuple[str, ...] = SENTENCES,
                 on_progress: Callable[[ReadingProgress], None] = lambda _p: None) -> None:
        if not name.strip():
            raise ValueError("a voiceprint needs a name")
        self.store = store
        self.encoder = encoder
        self.name = name.strip()
        self.sentences = sentences
        self.on_progress = on_progress
        self._vad = vad
        self._learned: list[tuple[np.ndarray, float]] = []
        self._stopped = False

    @property
    def enough(self) -> bool:
        seconds = sum(s for _e, s in self._learned)
        return len(self._learned) >= SURE_UTTERANCES and seconds >= SURE_SECONDS

    def stop(self) -> None:
        """End the reading early (the dialog closed): nothing is kept."""
        self._stopped = True

    async def run(self, source: AudioSource) -> bool:
        """Until enough is learned (True: the print is kept), the sentences run out or stop()
        (False: nothing kept), or the source ends."""
        vad = self._vad or SileroVad()
        lead = int(LEAD_S / FRAME_S)
        before: list[np.ndarray] = []
        speech: list[np.ndarray] = []
        voiced = quiet = 0
        note = ""
        self._tell(0.0, note)
        while not self._stopped and not self.enough and len(self._learned) < len(self.sentences):
            frame = await source.read()
            if frame is None or self._stopped:
                break
            probability = vad.probability(frame)
            if not speech:
                before = (before + [frame])[-lead:]
                if probability >= SPEECH_START:
                    speech, voiced, quiet = [*before, frame], 1, 0
            else:
                speech.append(frame)
                voiced, quiet = (voiced + 1, 0) if probability >= SPEECH_GOES_ON else (voiced, quiet + 1)
                if quiet * FRAME_S >= PAUSE_S:
                    audio = np.concatenate(speech[:len(speech) - quiet + 3])
                    speech, before = [], []
                    vad.reset()
                    note = await self._sentence(audio, voiced * FRAME_S)
            self._tell(rms(frame), note)
        if self._stopped or not self.enough:
            self._tell(0.0, "Nothing was kept." if self._stopped else
                       "That wasn't enough of your voice to be sure: nothing was kept. Try again somewhere quieter.",
                       finished=True)
            return False
        self.store.replace(self.name, self._learned, source="reading")
        log.info("voice: learned %s's voice from %d sentences read aloud (%.0f s)", self.name, len(self._learned),
                 sum(s for _e, s in self._learned))
        self._tell(0.0, f"Done: I know {self.name}'s voice now.", finished=True)
        return True

    async def _sentence(self, audio: np.ndarray, seconds: float) -> str:
        """One sentence heard: learned, or a note saying why not."""
        if seconds < MIN_SENTENCE_S:
            return "I didn't catch a whole sentence: read it again, please."
        started = time.perf_counter()
        embedding = await self.encoder.embed(audio)
        if embedding is None:
            return "I didn't catch a whole sentence: read it again, please."
        self._learned.append((embedding, round(seconds, 2)))
        log.debug("voice: sentence %d read (%.1f s, embedded in %.0f ms)", len(self._learned), seconds,
                  (time.perf_counter() - started) * 1000)
        return ""

    def _tell(self, level: float, note: str, *, finished: bool = False) -> None:
        done = len(self._learned)
        seconds = sum(s for _e, s in self._learned)
        # Five sentences if they are long enough; one more for each that was short.
        needed = min(len(self.sentences), max(SURE_UTTERANCES, done + (0 if seconds >= SURE_SECONDS else 1)))
        sentence = "" if finished or done >= len(self.sentences) else self.sentences[done]
        self.on_progress(ReadingProgress(level, sentence, done, needed, round(seconds, 1), finished, note))


def open_microphone(device: str = "", backend: str = "auto") -> AudioSource:
    """The microphone on the sound path `backend` chooses, with no echo canceller (nothing plays
    while a person reads). Blocking (the server is asked which path): ~10-100 ms."""
    import asyncio

    from companion.voice.sound.backend import PULSE, choose

    loop = asyncio.get_running_loop()
    if choose(backend).name == PULSE:
        from companion.voice.sound.pulse_devices import PulseSource

        return PulseSource(device, loop=loop)
    from companion.voice.sound.devices import DeviceSource

    return DeviceSource(device, loop=loop)
