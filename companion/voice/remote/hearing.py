"""Hearing on another machine: a Wyoming speech-to-text server (audio-start, audio-chunk…, audio-stop → transcript)."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop

from companion.errors import Stage
from companion.voice.hearing.stt import is_phantom
from companion.voice.remote import servers as remote
from companion.voice.remote.servers import ServerError, ServerInfo, Stopwatch
from companion.voice.sound.frames import SAMPLE_RATE

log = logging.getLogger(__name__)

CHUNK_SAMPLES = 1024
"""Samples per audio-chunk event (64 ms), what Home Assistant's satellites send."""
TRANSCRIPT_TIMEOUT_S = 20.0
"""How long the server may take to answer after audio-stop: a large model on a slow CPU needs seconds."""
TEST_CLIP_S = 1.0
START_TIMEOUT_S = 60.0
"""The test clip at start: a server may still be loading a large model."""


def pcm16(audio: np.ndarray) -> bytes:
    """float32 samples in [-1, 1] as little-endian 16-bit PCM."""
    return (np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


class WyomingTranscriber:
    """The Transcriber interface over a Wyoming server. `start()` reads its info and times a
    one-second test clip; a connection that drops mid-utterance is retried once, then reported
    as a ServerError (nothing waits longer than the timeouts)."""

    def __init__(self, uri: str, *, language: str | None = None,
                 transcript_timeout_s: float = TRANSCRIPT_TIMEOUT_S) -> None:
        self.uri = uri.strip()
        self.language = language
        self.transcript_timeout_s = transcript_timeout_s
        self.info: ServerInfo | None = None
        self.requests = 0
        """Utterances sent to the server (tests check which engine heard them)."""

    async def start(self, *, runs: int = 1) -> ServerInfo:
        """Describe the server and time a one-second test clip (the last of `runs`: the first may
        include the server loading its model); a ServerError when it is not usable."""
        info = remote.hearing_info(self.uri, await remote.describe(self.uri, Stage.HEARING))
        for _ in range(runs):
            watch = Stopwatch()
            await self._transcribe_once(np.zeros(int(SAMPLE_RATE * TEST_CLIP_S), dtype=np.float32),
                                        max(START_TIMEOUT_S, self.transcript_timeout_s))
        self.info = ServerInfo(info.uri, info.program, info.models, info.languages, round_trip_ms=watch.ms)
        self.requests = 0
        log.info("hearing server %s", self.info.summary())
        return self.info

    async def transcribe(self, audio: np.ndarray) -> str:
        """Text of 16 kHz mono float32 audio ("" when nothing was said)."""
        self.requests += 1
        try:
            text = await self._transcribe_once(audio)
        except ServerError as exc:
            if exc.code != "server_dropped":
                raise  # down, refusing, or too slow: asking again would only double the wait
            log.warning("hearing server dropped the utterance (%s); sending it once more", exc.sentence)
            text = await self._transcribe_once(audio)
        text = text.strip()
        return "" if is_phantom(text) else text

    async def _transcribe_once(self, audio: np.ndarray, timeout_s: float | None = None) -> str:
        watch = Stopwatch()
        data = pcm16(audio)
        step = CHUNK_SAMPLES * 2
        fmt = {"rate": SAMPLE_RATE, "width": 2, "channels": 1}
        async with remote.connect(self.uri, Stage.HEARING, read_timeout_s=timeout_s or self.transcript_timeout_s) as server:
            await server.send(
                Transcribe(language=self.language).event(), AudioStart(**fmt).event(),
                *(AudioChunk(audio=data[i:i + step], **fmt).event() for i in range(0, len(data), step)),
                AudioStop().event(),
            )
            while True:
                event = await server.receive()
                if Transcript.is_type(event.type):
                    text = Transcript.from_event(event).text
                    log.debug("hearing server: %.1f s of audio in %.0f ms: %r", len(audio) / SAMPLE_RATE, watch.ms, text)
                    return text

    def transcribe_sync(self, audio: np.ndarray) -> str:
        """For callers outside a running loop (the doctor, benchmarks)."""
        return asyncio.run(self.transcribe(audio))
