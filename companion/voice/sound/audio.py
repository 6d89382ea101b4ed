"""Audio sources and sinks that are not devices: WAV files (paced or fast) and nothing at all.

A source yields 16 kHz mono float32 frames of FRAME_SAMPLES; a sink plays float32 mono audio
at any rate, reports block levels (for lip sync) and can be stopped mid-sentence.
"""

from __future__ import annotations

import asyncio
import io
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
import soxr

from companion.errors import CompanionError, Stage
from companion.paths import atomic_write_bytes
from companion.voice.sound.frames import FRAME_S, FRAME_SAMPLES, SAMPLE_RATE, rms

LevelListener = Callable[[float], None]
StartListener = Callable[[float], None]
LEVEL_BLOCK_S = 0.02
"""Output levels are reported per 20 ms block."""


class AudioSource(Protocol):
    realtime: bool
    """False when frames arrive faster than real time (a WAV read as fast as possible)."""

    async def read(self) -> np.ndarray | None:
        """The next frame, or None when the source has ended or was closed."""

    def close(self) -> None: ...


class AudioSink(Protocol):
    async def play(self, audio: np.ndarray, rate: int) -> bool:
        """Play `audio`; True when all of it was played, False when stop() cut it short."""

    def stop(self) -> None:
        """End the current playback now."""

    def add_level_listener(self, listener: LevelListener) -> None: ...

    def add_start_listener(self, listener: StartListener) -> None:
        """`listener(time.monotonic())` when the first sample of each play() leaves for the speaker."""

    async def close(self) -> None: ...


def resample(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    if from_rate == to_rate or audio.size == 0:
        return audio.astype(np.float32, copy=False)
    return soxr.resample(audio.astype(np.float32, copy=False), from_rate, to_rate).astype(np.float32, copy=False)


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """Mono float32 samples and the rate of a 16-bit PCM WAV; a clear error for anything else."""
    try:
        with wave.open(str(path), "rb") as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            raw = wav.readframes(wav.getnframes())
    except FileNotFoundError as exc:
        raise CompanionError("wav_missing", f"There is no audio file at {path}.", stage=Stage.AUDIO) from exc
    except (wave.Error, EOFError) as exc:
        raise CompanionError(
            "wav_unreadable", f"{path} is not a WAV file I can read ({exc}); use 16-bit PCM WAV.",
            stage=Stage.AUDIO,
        ) from exc
    if width != 2:
        raise CompanionError(
            "wav_format", f"{path} uses {8 * width}-bit samples; I read 16-bit PCM WAV.", stage=Stage.AUDIO
        )
    samples = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1)
    return samples, rate


def wav_bytes(audio: np.ndarray, rate: int) -> bytes:
    pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.tobytes())
    return buffer.getvalue()


def write_wav(path: Path, audio: np.ndarray, rate: int) -> None:
    """Write mono float audio as 16-bit PCM WAV, atomically."""
    atomic_write_bytes(path, wav_bytes(audio, rate))


class WavSource:
    """A WAV file heard as if spoken: paced in real time, or as fast as the loop takes it.

    `tail_s` of silence follows the file so the last utterance gets its end-of-turn pause.
    """

    def __init__(self, path: Path, *, realtime: bool, tail_s: float = 1.5) -> None:
        audio, rate = read_wav(path)
        audio = resample(audio, rate, SAMPLE_RATE)
        tail = np.zeros(int(tail_s * SAMPLE_RATE), dtype=np.float32)
        audio = np.concatenate([audio, tail])
        pad = (-audio.size) % FRAME_SAMPLES
        self._audio = np.concatenate([audio, np.zeros(pad, dtype=np.float32)])
        self.realtime = realtime
        self._index = 0
        self._closed = False
        self._start: float | None = None

    @property
    def duration_s(self) -> float:
        return self._audio.size / SAMPLE_RATE

    @property
    def started_at(self) -> float | None:
        """time.monotonic() when a paced source handed out its first frame."""
        return self._start

    @property
    def position_s(self) -> float:
        """Seconds of the file handed out so far (the conversation's clock in fast mode)."""
        return self._index * FRAME_S

    async def read(self) -> np.ndarray | None:
        start = self._index * FRAME_SAMPLES
        if self._closed or start >= self._audio.size:
            return None
        if self.realtime:
            if self._start is None:
                self._start = time.monotonic()
            # A frame is "available" once its last sample would have been spoken.
            delay = self._start + (self._index + 1) * FRAME_S - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        else:
            await asyncio.sleep(0)
        self._index += 1
        return self._audio[start:start + FRAME_SAMPLES]

    def close(self) -> None:
        self._closed = True


class NullSource:
    """No microphone: never yields a frame, ends when closed."""

    realtime = True

    def __init__(self) -> None:
        self._closed = asyncio.Event()

    async def read(self) -> np.ndarray | None:
        await self._closed.wait()
        return None

    def close(self) -> None:
        self._closed.set()


class _Levels:
    """Level (lip sync) and start-of-playback listeners, shared by every sink."""

    def __init__(self) -> None:
        self._listeners: list[LevelListener] = []
        self._start_listeners: list[StartListener] = []

    def add_level_listener(self, listener: LevelListener) -> None:
        self._listeners.append(listener)

    def add_start_listener(self, listener: StartListener) -> None:
        self._start_listeners.append(listener)

    def echo_settled(self) -> bool:
        """Whether her echo, if the microphone hears this sink through a canceller, is removed as
        the canceller has learned it (True with no canceller: then the floor allows for her echo)."""
        return True

    def _report(self, level: float) -> None:
        for listener in self._listeners:
            listener(level)

    def _started(self, when: float) -> None:
        for listener in self._start_listeners:
            listener(when)


class NullSink(_Levels):
    """No speaker (or muted output): playback finishes at once."""

    async def play(self, audio: np.ndarray, rate: int) -> bool:
        self._started(time.monotonic())
        await asyncio.sleep(0)
        return True

    def stop(self) -> None:
        pass

    async def close(self) -> None:
        pass


class WavSink(_Levels):
    """Collects what she says on a timeline, with the silences between, for writing to a WAV.

    Each sentence starts at `clock()` seconds (the conversation's time) or right after the
    previous one. With `realtime` it plays at speaking pace and can be stopped part-way.
    """

    def __init__(self, clock: Callable[[], float], *, rate: int = 22_050, realtime: bool = False) -> None:
        super().__init__()
        self.rate = rate
        self.realtime = realtime
        self._clock = clock
        self._pieces: list[np.ndarray] = []
        self._length = 0
        self._stopped = asyncio.Event()
        self.first_sample_at: float | None = None
        """time.monotonic() when the first sample was 'played' (for latency measurement)."""

    async def play(self, audio: np.ndarray, rate: int) -> bool:
        try:
            return await self._play(audio, rate)
        finally:
            self._report(0.0)  # her mouth closes between lines and when she is cut off

    async def _play(self, audio: np.ndarray, rate: int) -> bool:
        audio = resample(audio, rate, self.rate)
        self._stopped.clear()
        start = max(self._length, int(self._clock() * self.rate))
        if start > self._length:
            self._append(np.zeros(start - self._length, dtype=np.float32))
        block = int(LEVEL_BLOCK_S * self.rate)
        began = time.monotonic()
        for offset in range(0, audio.size, block):
            if self._stopped.is_set():
                return False
            piece = audio[offset:offset + block]
            if offset == 0:
                now = time.monotonic()
                if self.first_sample_at is None:
                    self.first_sample_at = now
                self._started(now)
            self._append(piece)
            self._report(rms(piece))
            if self.realtime:
                due = began + (offset + piece.size) / self.rate
                try:
                    await asyncio.wait_for(self._stopped.wait(), max(0.0, due - time.monotonic()))
                    return False
                except TimeoutError:
                    pass
            else:
                await asyncio.sleep(0)
        return not self._stopped.is_set()

    def _append(self, piece: np.ndarray) -> None:
        self._pieces.append(piece.astype(np.float32, copy=False))
        self._length += piece.size

    def stop(self) -> None:
        self._stopped.set()

    def audio(self) -> np.ndarray:
        return np.concatenate(self._pieces) if self._pieces else np.zeros(0, dtype=np.float32)

    def write(self, path: Path, *, min_s: float = 0.0) -> None:
        audio = self.audio()
        short = int(min_s * self.rate) - audio.size
        if short > 0:
            audio = np.concatenate([audio, np.zeros(short, dtype=np.float32)])
        write_wav(path, audio, self.rate)

    async def close(self) -> None:
        self.stop()
