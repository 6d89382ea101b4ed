"""Microphone and speaker through sounddevice: separate input and output streams (never duplex).

PortAudio callbacks run on their own threads; they touch nothing but a thread-safe queue or
buffer, and hand results to the event loop through call_soon_threadsafe (the one door).
With an EchoWorker, the speaker hands it every block it plays (with the block's DAC time) and
the microphone every block it hears (with its ADC time); the microphone then reads the
worker's cleaned audio instead of its own.
Each device keeps its identity when its sound server goes away: the sound watch
(companion.voice.sound.watch) detaches the dead stream and later reopens a new one in place.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np
import soxr

from companion.errors import CompanionError, Stage
from companion.voice.sound.audio import LEVEL_BLOCK_S, _Levels, resample
from companion.voice.sound.echo_worker import EchoWorker
from companion.voice.sound.frames import FRAME_SAMPLES, SAMPLE_RATE, rms

log = logging.getLogger(__name__)

TEXT_FALLBACK = "I'll carry on in text: type to me instead."
SPEAKER_LATENCY_S = 0.1
"""The speaker's buffer through PortAudio. Its 'high' default through ALSA's pulse plugin is
40 ms, two of her 20 ms blocks: beside busy cores her callback came late 60-340 times in one
reply, each underrun broke a word, the stamps drifted by 300-600 ms, and her echo came through
(10-17 dB removed). 100 ms, as the sound-server path's 60 ms target plus its request, costs
60 ms on her first sound and on stopping, on this path only."""


def _sounddevice():
    try:
        import sounddevice
    except OSError as exc:  # libportaudio2 missing
        raise CompanionError(
            "no_portaudio", f"I can't use sound on this machine: PortAudio is not installed ({exc}). "
            f"Install libportaudio2. {TEXT_FALLBACK}", stage=Stage.AUDIO,
        ) from exc
    return sounddevice


def _device(value: str) -> int | str | None:
    if not value:
        return None
    return int(value) if value.isdigit() else value


def _pick_rate(sd, device, preferred: int, *, output: bool) -> int:
    check = sd.check_output_settings if output else sd.check_input_settings
    try:
        check(device=device, samplerate=preferred, channels=1, dtype="float32")
        return preferred
    except Exception:
        info = sd.query_devices(device, "output" if output else "input")
        return int(info["default_samplerate"])


def _require(sd, *, output: bool) -> None:
    key = "max_output_channels" if output else "max_input_channels"
    if not any(device[key] > 0 for device in sd.query_devices()):
        what = "speaker" if output else "microphone"
        raise CompanionError(
            f"no_{what}", f"I can't find a {what} on this machine. {TEXT_FALLBACK}", stage=Stage.AUDIO
        )


def reinitialise_portaudio() -> None:
    """Make PortAudio find the sound server and its devices again (blocking).

    PortAudio reads them only when it initialises, and sounddevice has no public call for
    this: its private _terminate/_initialize pair is the documented way round. Terminating
    closes every stream of the process, so every device must be detached first."""
    sd = _sounddevice()
    sd._terminate()
    sd._initialize()


def list_devices() -> list[dict]:
    """Every PortAudio device with its input and output channel counts (empty with no sound card)."""
    sd = _sounddevice()
    return [dict(d) for d in sd.query_devices()]


def _stamp(stamp: float, stream, *, output: bool) -> float:
    """A block's DAC/ADC time; host APIs that leave it 0 get the stream's clock and latency."""
    if stamp:
        return stamp
    return stream.time + stream.latency if output else stream.time - stream.latency


class _Watched:
    """What the sound watch reads of a device: when its stream last delivered a block, and a
    hook for the stream ending by itself (its sound server died). PortAudio's thread writes
    `last_block_at` (one float: no lock needed) and calls `on_ended`."""

    def _init_watch(self) -> None:
        self.last_block_at = 0.0
        """time.monotonic() of the stream's newest callback (0: none since it opened)."""
        self.opened_at = time.monotonic()
        self.on_ended: Callable[[], None] | None = None
        """Called on PortAudio's thread when the stream stopped without being asked."""
        self._stream = None
        self._token: object | None = None  # the stream whose end means trouble

    def _watched_stream(self) -> tuple[object, Callable[[], None]]:
        """A token for a new stream and its finished_callback (ours: stop, close, detach clear it)."""
        token = self._token = object()
        return token, lambda: self._finished(token)

    def _finished(self, token: object) -> None:
        if token is self._token and self.on_ended is not None:
            self.on_ended()

    @property
    def attached(self) -> bool:
        """A stream is open (False after detach() until reopen())."""
        return self._stream is not None

    @property
    def ended(self) -> bool:
        """The open stream has stopped by itself (its sound server died)."""
        stream = self._stream
        return stream is not None and not stream.active

    def detach(self):
        """The sound server is gone: forget the stream and return it (the caller closes it,
        off the loop: closing a stream of a stalled server blocks until the server answers)."""
        self._token = None
        stream, self._stream = self._stream, None
        return stream


class DeviceSource(_Watched):
    """The microphone at 16 kHz mono; resampled with soxr when the device runs at another rate.

    With `echo`, every block goes through the echo canceller's thread, which resamples it, and
    what is read is the cleaned audio.
    """

    realtime = True
    backend = "portaudio"
    """Which sound path the stream takes (companion.voice.sound.backend)."""

    def __init__(self, device: str = "", *, loop: asyncio.AbstractEventLoop | None = None,
                 rate: int | None = None, echo: EchoWorker | None = None) -> None:
        """`rate` forces the device's sample rate (default: 16 kHz if it can, else its own)."""
        self._init_watch()
        self._loop = loop or asyncio.get_running_loop()
        # Blocks wait in a deque, and a reader waits on a future of this source's own loop, not
        # on an asyncio.Queue: a Queue binds to whichever loop is *running* when it first waits,
        # and qasync's run_until_complete steps tasks once more after its loop has stopped, with
        # no loop running; a read stepped then raised "Queue … is bound to a different event
        # loop" and her hearing restarted (seen in the window tests on close).
        self._blocks: deque[np.ndarray | None] = deque()
        self._arrived: asyncio.Future[None] | None = None
        self._pending = np.zeros(0, dtype=np.float32)
        self._closed = False
        self._echo = echo
        self._name, self._forced_rate = device, rate
        self._open()

    def _open(self) -> None:
        """Open and start the input stream (at start, and again once the sound server is back)."""
        sd = _sounddevice()
        _require(sd, output=False)
        dev = _device(self._name)
        try:
            self.rate = self._forced_rate or _pick_rate(sd, dev, SAMPLE_RATE, output=False)
            self._resampler = soxr.ResampleStream(self.rate, SAMPLE_RATE, 1, dtype="float32") \
                if self.rate != SAMPLE_RATE and self._echo is None else None
            if self._echo is not None:
                self._echo.connect(self._cleaned)
            _token, finished = self._watched_stream()
            self.opened_at, self.last_block_at = time.monotonic(), 0.0
            self._stream = sd.InputStream(
                device=dev, samplerate=self.rate, channels=1, dtype="float32",
                blocksize=int(self.rate * 0.032), callback=self._callback, finished_callback=finished,
            )
            self._stream.start()
        except Exception as exc:
            _close_quietly(_Watched.detach(self))  # may run off the loop: nothing to resolve here
            raise CompanionError(
                "no_microphone", f"I can't open the microphone{f' {self._name!r}' if self._name else ''} ({exc}). "
                f"{TEXT_FALLBACK}", stage=Stage.AUDIO,
            ) from exc

    def reopen(self) -> None:
        """A new stream on the same device (blocking; after reinitialise_portaudio). Raises
        CompanionError when it can't be opened yet."""
        self._pending = np.zeros(0, dtype=np.float32)  # half a frame from before the gap
        self._open()

    def _callback(self, indata, frames, time_info, status) -> None:
        stream = self._stream
        if status:
            log.debug("input status: %s", status)
        if stream is None:  # detached while this block was on its way
            self.last_block_at = time.monotonic()
            return
        self._heard(indata[:, 0].copy(), _stamp(time_info.inputBufferAdcTime, stream, output=False),
                    bool(status.input_overflow))

    def _heard(self, block: np.ndarray, adc_time: float, xrun: bool, *, exact: bool = False) -> None:
        """On the stream's thread: a block captured at `adc_time` (`exact`: the stamp comes
        from the server's own indexes, not PortAudio's estimate)."""
        self.last_block_at = time.monotonic()
        if self._stream is None:
            return
        if self._echo is not None:
            self._echo.capture(block, self.rate, adc_time, xrun, exact=exact)
        else:
            self._loop.call_soon_threadsafe(self._put, block)

    def _cleaned(self, block: np.ndarray) -> None:
        """From the echo canceller's thread: cleaned 16 kHz audio."""
        if not self._closed:
            self._loop.call_soon_threadsafe(self._put, block)

    def _put(self, block: np.ndarray | None) -> None:
        """On the loop's thread: a block arrived (None: the source closed)."""
        self._blocks.append(block)
        if self._arrived is not None and not self._arrived.done():
            self._arrived.set_result(None)

    async def _next_block(self) -> np.ndarray | None:
        while not self._blocks:
            self._arrived = self._loop.create_future()
            await self._arrived
        return self._blocks.popleft()

    async def read(self) -> np.ndarray | None:
        while self._pending.size < FRAME_SAMPLES:
            block = await self._next_block()
            if block is None or self._closed:
                return None
            if self._resampler is not None:
                block = self._resampler.resample_chunk(block)
            self._pending = np.concatenate([self._pending, block])
        frame, self._pending = self._pending[:FRAME_SAMPLES], self._pending[FRAME_SAMPLES:]
        return frame

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        _close_quietly(self.detach())
        self._resampler = None  # soxr's bindings report one alive at exit as a leak
        self._put(None)


class _Playback:
    def __init__(self, audio: np.ndarray, done: asyncio.Future) -> None:
        self.audio = audio
        self.offset = 0
        self.done = done


class DeviceSink(_Levels, _Watched):
    """The speaker: one output stream kept open; sentences are queued into its callback.

    With `echo`, each block handed to the device, silence included, goes to the echo
    canceller as the far end, stamped with its DAC time.
    """

    backend = "portaudio"

    def __init__(self, device: str = "", *, loop: asyncio.AbstractEventLoop | None = None,
                 preferred_rate: int = 22_050, echo: EchoWorker | None = None) -> None:
        super().__init__()
        self._init_watch()
        self._echo = echo
        self._loop = loop or asyncio.get_running_loop()
        self._lock = threading.Lock()
        self._queue: deque[_Playback] = deque()
        self._sounding = False
        self.first_sample_at: float | None = None
        self._name, self._preferred_rate = device, preferred_rate
        self._open()

    def _open(self) -> None:
        """Open and start the output stream (at start, and again once the sound server is back)."""
        sd = _sounddevice()
        _require(sd, output=True)
        dev = _device(self._name)
        try:
            self.rate = _pick_rate(sd, dev, self._preferred_rate, output=True)
            _token, finished = self._watched_stream()
            self.opened_at, self.last_block_at = time.monotonic(), 0.0
            self._stream = sd.OutputStream(
                device=dev, samplerate=self.rate, channels=1, dtype="float32",
                blocksize=int(self.rate * LEVEL_BLOCK_S), latency=SPEAKER_LATENCY_S, callback=self._callback,
                finished_callback=finished,
            )
            self._stream.start()
        except Exception as exc:
            _close_quietly(_Watched.detach(self))  # may run off the loop: nothing to resolve here
            raise CompanionError(
                "no_speaker", f"I can't open the speaker{f' {self._name!r}' if self._name else ''} ({exc}). "
                f"{TEXT_FALLBACK}", stage=Stage.AUDIO,
            ) from exc

    def reopen(self) -> None:
        """A new stream on the same device (blocking; after reinitialise_portaudio). Raises
        CompanionError when it can't be opened yet."""
        self._open()

    def echo_settled(self) -> bool:
        return self._echo is None or self._echo.settled

    def detach(self):
        """As for the microphone; every line waiting to play ends unplayed (play() returns
        False, so her turn ends instead of waiting on a speaker that is gone) and her mouth closes.
        On the loop's thread."""
        stream = super().detach()
        self.stop()
        if self._sounding:
            self._sounding = False
            self._report(0.0)
        return stream

    def _callback(self, outdata, frames, time_info, status) -> None:
        stream = self._stream
        dac_time = _stamp(time_info.outputBufferDacTime, stream, output=True) if stream is not None else 0.0
        self._serve(outdata[:, 0], dac_time, bool(status.output_underflow))

    def _serve(self, out: np.ndarray, dac_time: float, xrun: bool, *, exact: bool = False) -> None:
        """On the stream's thread: fill `out` (whose first sample sounds at `dac_time`) from the
        queue and hand it to the echo canceller (`exact`: the stamp comes from the server)."""
        self.last_block_at = time.monotonic()
        if not self._queue and not self._sounding:
            # Nothing to play and her mouth closed (while she waits for a call, 100 times a
            # second): silence, and the canceller may take it with the next blocks. An item
            # queued meanwhile plays from the next block, 10-20 ms on, as it would after the lock.
            out[:] = 0.0
            if self._echo is not None and self._stream is not None:
                self._echo.render(out, self.rate, dac_time, xrun, exact=exact, silent=True)
            return
        frames = out.size
        filled = 0
        finished: list[_Playback] = []
        started = False
        with self._lock:
            while filled < frames and self._queue:
                item = self._queue[0]
                started = started or item.offset == 0
                take = min(frames - filled, item.audio.size - item.offset)
                out[filled:filled + take] = item.audio[item.offset:item.offset + take]
                item.offset += take
                filled += take
                if item.offset >= item.audio.size:
                    finished.append(self._queue.popleft())
        out[filled:] = 0.0
        if self._echo is not None and self._stream is not None:
            self._echo.render(out.copy(), self.rate, dac_time, xrun, exact=exact)
        if filled:
            level = rms(out[:filled])
            self._loop.call_soon_threadsafe(self._played, level, finished, started)
            self._sounding = True
        elif self._sounding:
            # One silent level when she stops, so her mouth closes.
            self._sounding = False
            self._loop.call_soon_threadsafe(self._report, 0.0)

    def _played(self, level: float, finished: list[_Playback], started: bool) -> None:
        if started:
            now = time.monotonic()
            if self.first_sample_at is None:
                self.first_sample_at = now
            self._started(now)
        self._report(level)
        for item in finished:
            if not item.done.done():
                item.done.set_result(True)

    async def play(self, audio: np.ndarray, rate: int) -> bool:
        audio = resample(audio, rate, self.rate)
        if audio.size == 0:
            return True
        if self._stream is None:
            return False  # no sound server: the line is not played (it shows as text)
        item = _Playback(audio, self._loop.create_future())
        with self._lock:
            self._queue.append(item)
        if self._echo is not None:
            self._echo.expect_sound()  # the microphone waits for this line's far end from now on
        return await item.done

    def stop(self) -> None:
        with self._lock:
            dropped = list(self._queue)
            self._queue.clear()
        for item in dropped:
            if not item.done.done():
                item.done.set_result(False)

    async def close(self) -> None:
        self.stop()
        _close_quietly(_Watched.detach(self))


def _close_quietly(stream) -> None:
    """Stop and close a stream (None: nothing); one whose server died fails, which is fine."""
    if stream is None:
        return
    try:
        stream.stop()
        stream.close()
    except Exception:
        log.debug("closing a stream failed", exc_info=True)
