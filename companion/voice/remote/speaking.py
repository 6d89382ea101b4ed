"""Her voice on another machine: a Wyoming text-to-speech server (synthesize → audio-start, audio-chunk…, audio-stop).

The Speaker hands over one sentence at a time, one ahead of playback, exactly as with the
local piper, so the narration cache, barge-in and lip sync see no difference.
"""

from __future__ import annotations

import asyncio
import logging

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.tts import Synthesize, SynthesizeVoice

from companion.errors import Stage
from companion.voice.remote import servers as remote
from companion.voice.remote.servers import ServerError, ServerInfo, Stopwatch
from companion.voice.sound.audio import resample

log = logging.getLogger(__name__)

FIRST_AUDIO_TIMEOUT_S = 10.0
"""How long the server may think before the first audio of a sentence."""
SENTENCE_TIMEOUT_S = 30.0
"""The whole of one sentence, however the server trickles it."""
START_TIMEOUT_S = 30.0
"""The test sentence at start: wyoming-piper loads the voice on its first request, slowly on a busy machine."""
TEST_SENTENCE = "Hello, how are you today?"


def server_voice(setting: str) -> str:
    """The voice name to ask a server for: voice.voice when it names a voice, not a local file."""
    setting = setting.strip()
    return "" if not setting or "/" in setting or setting.endswith(".onnx") else setting


def float_samples(data: bytes, width: int, channels: int) -> np.ndarray:
    """PCM bytes (8, 16 or 32 bit) as mono float32 in [-1, 1]."""
    dtype = {1: np.uint8, 2: "<i2", 4: "<i4"}[width]
    samples = np.frombuffer(data, dtype=dtype).astype(np.float32)
    samples = (samples - 128.0) / 128.0 if width == 1 else samples / float(2 ** (8 * width - 1))
    if channels > 1:
        samples = samples[: len(samples) // channels * channels].reshape(-1, channels).mean(axis=1)
    return samples


class WyomingSynthesizer:
    """The Synthesizer interface over a Wyoming server.

    `sample_rate` is the server's (learned from the test sentence in `start()`); audio at
    another rate (a different voice) is resampled to it, so the sink never changes rate.
    `speed` is kept for the interface: the server sets the pace (wyoming-piper's --length-scale).
    """

    def __init__(self, uri: str, *, voice: str = "", speed: float = 1.0,
                 first_audio_timeout_s: float = FIRST_AUDIO_TIMEOUT_S) -> None:
        self.uri = uri.strip()
        self.voice = voice
        """A voice name the server lists; empty for its default voice."""
        self.speed = speed
        self.first_audio_timeout_s = first_audio_timeout_s
        self.sample_rate = 22_050
        self.info: ServerInfo | None = None
        self.synth_count = 0
        """How many texts were synthesized (the narration cache test checks it stays put)."""

    async def start(self, *, runs: int = 1) -> ServerInfo:
        """Describe the server and time a short test sentence (the last of `runs`: wyoming-piper
        loads its voice on the first request); a ServerError when it is not usable."""
        info = remote.voice_info(self.uri, await remote.describe(self.uri, Stage.SPEAKING))
        if self.voice and info.models and self.voice not in info.models:
            raise ServerError(
                "unknown_voice", f"My voice server at {self.uri} has no voice {self.voice!r} "
                f"(it offers {', '.join(info.models[:5])}). Choose one of those in Settings → Voice, "
                "or leave the voice empty for the server's own.", stage=Stage.SPEAKING, uri=self.uri)
        for _ in range(runs):
            watch = Stopwatch()
            _audio, rate = await self._synthesize_once(TEST_SENTENCE, max(START_TIMEOUT_S, self.first_audio_timeout_s))
        self.sample_rate = rate
        self.info = ServerInfo(info.uri, info.program, (self.voice,) if self.voice else info.models,
                               info.languages, round_trip_ms=watch.ms)
        log.info("voice server %s", self.info.summary("voices"))
        return self.info

    async def synthesize(self, text: str) -> np.ndarray:
        """float32 mono audio at `sample_rate` for `text`."""
        self.synth_count += 1
        audio, rate = await self._synthesize_once(text)
        return resample(audio, rate, self.sample_rate)

    async def _synthesize_once(self, text: str, first_audio_timeout_s: float | None = None) -> tuple[np.ndarray, int]:
        watch = Stopwatch()
        first = first_audio_timeout_s or self.first_audio_timeout_s
        whole = max(SENTENCE_TIMEOUT_S, first)
        try:
            async with asyncio.timeout(whole):
                audio, rate = await self._receive_sentence(text, first)
        except TimeoutError as exc:
            raise remote.dropped(self.uri, Stage.SPEAKING, f"took over {whole:g} s for one sentence",
                                 code="server_timeout") from exc
        log.debug("voice server: %r in %.0f ms (%.1f s of audio)", text[:40], watch.ms, len(audio) / rate)
        return audio, rate

    async def _receive_sentence(self, text: str, first_audio_timeout_s: float) -> tuple[np.ndarray, int]:
        request = Synthesize(text=text, voice=SynthesizeVoice(name=self.voice) if self.voice else None)
        pieces: list[np.ndarray] = []
        rate = self.sample_rate
        async with remote.connect(self.uri, Stage.SPEAKING, read_timeout_s=first_audio_timeout_s) as server:
            await server.send(request.event())
            while True:
                event = await server.receive()
                if AudioStart.is_type(event.type):
                    rate = AudioStart.from_event(event).rate
                elif AudioChunk.is_type(event.type):
                    chunk = AudioChunk.from_event(event)
                    rate = chunk.rate
                    pieces.append(float_samples(chunk.audio, chunk.width, chunk.channels))
                elif AudioStop.is_type(event.type):
                    break
        return (np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)), rate

    def synthesize_sync(self, text: str) -> np.ndarray:
        """For callers outside a running loop (the doctor, benchmarks)."""
        return asyncio.run(self.synthesize(text))
