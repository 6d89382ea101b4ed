"""Her microphone and speaker opened straight on the sound server (companion.voice.sound.pulse).

They are DeviceSource and DeviceSink with another stream under them: the queue, the levels,
the echo canceller's feed and the sound watch's view are the same objects, so her ear, her
mouth and the watch do not know which path the sound takes. What changes is the timing: each
block's time comes from the server's own clock and the stream's index (exact), and the server
says when it underran, overflowed or moved the stream to another device.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np

from companion.errors import CompanionError, Stage
from companion.voice.sound.audio import LEVEL_BLOCK_S
from companion.voice.sound.devices import TEXT_FALLBACK, DeviceSink, DeviceSource, _Watched
from companion.voice.sound.frames import SAMPLE_RATE
from companion.voice.sound.pulse import BufferAttr, PulseError, PulseStream

__all__ = ["MICROPHONE_BUFFER", "PulseSink", "PulseSource", "SPEAKER_BUFFER"]

log = logging.getLogger(__name__)

MICROPHONE_BUFFER = BufferAttr(target_ms=20.0)
"""The server sends the microphone in 20 ms fragments (its latency): measured on this 2-core
machine beside a busy core with no overflow; 10 ms fragments cost twice the wake-ups for no
gain the ear can use (it reads 32 ms frames)."""
IDLE_MICROPHONE_BUFFER = BufferAttr(target_ms=100.0)
"""While she waits for a call (nobody speaks, no turn runs: VoiceSession tells the microphone
through set_busy) the server sends the microphone in 100 ms fragments: its thread and the echo
canceller's wake ~10 times a second instead of ~32. The wake word and the VAD hear the start of
a call up to 80 ms later; the user speaking makes her busy and the fragments are 20 ms again
long before the call ends, so when she answers is unchanged."""
SPEAKER_BUFFER = BufferAttr(target_ms=60.0, request_ms=10.0, prebuf_ms=10.0)
"""60 ms queued at the server (~50 ms granted at the device), refilled in 10 ms pieces; after
an underrun it plays again once 10 ms is there (the default prebuf, a whole target, doubles the
pause). At load ~20 on 2 cores a 40 ms target underran 3-13 times per 3 s line (and the echo
removal fell to 15-25 dB); 60 ms underran 0-4 times, keeping 32-51 dB."""

IDLE_AHEAD_S = 0.04
"""While nobody speaks, no turn runs and she has nothing to play (VoiceSession tells the speaker
through set_busy), each of the server's requests is answered with at least 40 ms of silence:
the queue stands up to 30 ms above its target, so the server asks 25 times a second instead of
50 (measured on the private PulseAudio), and her speaker's thread wakes half as often while she
waits for a call. The stamps stay exact (the queue's depth is in them). A reply never pays for it: the user
speaking makes her busy, and the queue is back at its target 40 ms later, long before her
first word; a line she starts while idle (a reminder) waits up to 30 ms longer."""


SERVER_DEFAULT_NAMES = frozenset({"default", "pulse", "pipewire", "sysdefault"})
"""ALSA's names for "the sound server's default device", saved from PortAudio's device list:
on the server itself they name no device, so they mean its default (the server's "" here)."""


def server_device(name: str) -> str:
    """The device name to ask the server for ("" is its default)."""
    return "" if name.strip().lower() in SERVER_DEFAULT_NAMES else name


class PulseSource(DeviceSource):
    """The microphone at 16 kHz mono (the server resamples), in 20 ms fragments."""

    backend = "pulse"

    def __init__(self, device: str = "", *, buffer: BufferAttr = MICROPHONE_BUFFER,
                 idle_buffer: BufferAttr = IDLE_MICROPHONE_BUFFER, **kwargs) -> None:
        self._buffer, self._idle_buffer = buffer, idle_buffer
        self._idle = False
        super().__init__(device, **kwargs)

    def set_busy(self, busy: bool) -> None:
        """From the event loop: the user speaks or a turn runs (False: she waits for a call,
        and the server may send the microphone in bigger fragments: IDLE_MICROPHONE_BUFFER)."""
        if self._idle == (not busy):
            return
        self._idle = not busy
        attr = self._idle_buffer if self._idle else self._buffer
        self._block = int(self.rate * attr.target_ms / 1000)
        stream = self._stream
        if isinstance(stream, PulseStream):
            stream.set_attr(attr)

    def _open(self) -> None:
        self.rate, self._resampler = self._forced_rate or SAMPLE_RATE, None
        if self.rate != SAMPLE_RATE and self._echo is None:
            import soxr

            self._resampler = soxr.ResampleStream(self.rate, SAMPLE_RATE, 1, dtype="float32")
        if self._echo is not None:
            self._echo.connect(self._cleaned)
        attr = self._idle_buffer if self._idle else self._buffer
        self._block = int(self.rate * attr.target_ms / 1000)
        self._gathered: list[np.ndarray] = []
        self._gathered_size, self._gathered_at, self._gathered_xrun = 0, 0.0, False
        token, _finished = self._watched_stream()
        _open_pulse(self, token, lambda: PulseStream(
            rate=self.rate, attr=attr, device=server_device(self._name), name="companion microphone",
            on_record=self._recorded, on_ended=lambda: self._finished(token)), "microphone")

    def _recorded(self, samples: np.ndarray | None, _count: int, at: float, xrun: bool) -> None:
        """On the mainloop's thread. A remapped source hands fragments of 1-300 frames: they are
        gathered into blocks of at least a fragment, stamped with their first frame's time."""
        self._gathered_xrun = self._gathered_xrun or xrun
        if samples is None:  # a hole (audio the server lost): the next block's stamp shows it
            self._flush_gathered()
            return
        if not self._gathered:
            self._gathered_at = at
        self._gathered.append(samples)
        self._gathered_size += samples.size
        if self._gathered_size >= self._block:
            self._flush_gathered()

    def _flush_gathered(self) -> None:
        if self._gathered:
            block = np.concatenate(self._gathered) if len(self._gathered) > 1 else self._gathered[0]
            self._heard(block, self._gathered_at, self._gathered_xrun, exact=True)
            self._gathered_xrun = False
        self._gathered, self._gathered_size = [], 0


class PulseSink(DeviceSink):
    """The speaker at her voice's rate (the server resamples), refilled as the server asks."""

    backend = "pulse"

    def __init__(self, device: str = "", *, buffer: BufferAttr = SPEAKER_BUFFER, **kwargs) -> None:
        self._buffer = buffer
        self._idle = False
        """Told by the session that nobody speaks and no turn runs (IDLE_AHEAD_S)."""
        super().__init__(device, **kwargs)

    def set_busy(self, busy: bool) -> None:
        """From the event loop: the user speaks or a turn runs (False: she waits for a call)."""
        self._idle = not busy

    def _open(self) -> None:
        self.rate = self._preferred_rate
        token, _finished = self._watched_stream()
        _open_pulse(self, token, lambda: PulseStream(
            rate=self.rate, attr=self._buffer, device=server_device(self._name), name="companion speaker",
            on_playback=self._requested, on_ended=lambda: self._finished(token)), "speaker")

    def _requested(self, count: int, at: float, xrun: bool) -> np.ndarray:
        if self._idle and not self._queue and not self._sounding:
            count = max(count, int(self.rate * IDLE_AHEAD_S))
        out = np.zeros(count, dtype=np.float32)
        block = max(1, int(self.rate * LEVEL_BLOCK_S))
        for start in range(0, count, block):  # her mouth moves per 20 ms, as on PortAudio
            self._serve(out[start:start + block], at + start / self.rate, xrun and start == 0, exact=True)
        return out


def _open_pulse(device: _Watched, token: object, make: Callable[[], PulseStream], what: str) -> None:
    """Connect `make()`'s stream and attach it (blocking); a refusal is a CompanionError."""
    device.opened_at, device.last_block_at = time.monotonic(), 0.0
    try:
        stream = make()
    except PulseError as exc:
        device._token = None
        name = device._name
        raise CompanionError(
            f"no_{what}", f"I can't open the {what}{f' {name!r}' if name else ''} on the sound server ({exc}). "
            f"{TEXT_FALLBACK}", stage=Stage.AUDIO,
        ) from exc
    if token is device._token:
        device._stream = stream
        log.info("%s on the sound server: %s, buffer %s", what, stream.device, stream.granted)
    else:  # detached while opening
        stream.close()


def stream_counts(device: _Watched) -> dict[str, int]:
    """What the server reported on the device's open stream (empty on PortAudio or detached)."""
    stream = device._stream
    if not isinstance(stream, PulseStream):
        return {}
    return {"underflows": stream.underflows, "overflows": stream.overflows, "moves": stream.moves,
            "wild_clocks": stream.wild_clocks}
