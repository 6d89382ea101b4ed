"""Streams straight on the sound server (PulseAudio, or PipeWire's pulse) through libpulse's
asynchronous API, over ctypes: no PortAudio, no ALSA plugin in between.

Why ctypes over Debian's libpulse0 rather than a package: `pulsectl` binds the control side
only (no stream I/O), `pasimple` is libpulse's blocking simple API (no underflow or overflow
callbacks, no timing info), and `miniaudio`'s own PulseAudio backend hides the server's timing
behind its device callback. The asynchronous API gives what the echo canceller needs: the
stream's own clock (pa_stream_get_time, interpolated on CLOCK_MONOTONIC, the clock of
time.monotonic()), exact read and write indexes, and a callback for each underflow, overflow
and move to another device.

Each PulseStream runs on a threaded mainloop and context of its own, so the microphone and the
speaker are opened, lost and reopened independently. Its callbacks run on that mainloop's
thread with its lock held: they only hand samples on (the device layer's one door).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from companion.voice.sound.pulse_lib import (
    _ADJUST_LATENCY,
    _AUTO_TIMING_UPDATE,
    _CONTEXT_CB,
    _CONTEXT_NOAUTOSPAWN,
    _CTX_FAILED,
    _CTX_READY,
    _CTX_TERMINATED,
    _FLOAT32LE,
    _INTERPOLATE_TIMING,
    _NO_VALUE,
    _NOT_MONOTONIC,
    _REQUEST_CB,
    _STREAM_CB,
    _STREAM_FAILED,
    _STREAM_READY,
    _STREAM_TERMINATED,
    PulseError,
    _BufferAttr,
    _SampleSpec,
    library,
)

__all__ = ["BufferAttr", "PulseError", "PulseStream", "library", "server_info"]

log = logging.getLogger(__name__)

CLOCK_STRAY_S = 10.0
"""A stream's clock further than this from its own count of frames is not a time: on a loaded
machine (two busy loops beside a busy core) libpulse's interpolating smoother returned clocks
4.7e9 and -3.8e11 s on a 24 kHz speaker. Its real clock stays within the buffer (60 ms for the
speaker, the queued fragments for the microphone) plus any underrun."""


def stream_clock(raw_usec: int, counted_s: float) -> float | None:
    """pa_stream_get_time's value as seconds, or None when it cannot be the stream's time
    (further than CLOCK_STRAY_S from `counted_s`, the frames read or written so far)."""
    # Just after a start or an underrun the sink's latency can exceed what it has played:
    # the time is then "negative", which the unsigned pa_usec_t wraps round.
    clock = (raw_usec - (1 << 64) if raw_usec >= 1 << 63 else raw_usec) / 1e6
    return clock if abs(clock - counted_s) <= CLOCK_STRAY_S else None


@dataclass(frozen=True)
class BufferAttr:
    """How much audio the server keeps between her and the device (pa_buffer_attr, in ms)."""

    target_ms: float = 40.0
    """Playback: the whole buffer the server aims at (tlength), its device's own latency included
    (PA_STREAM_ADJUST_LATENCY). Recording: the fragment the server sends at once (fragsize),
    which is also the microphone's latency."""
    request_ms: float = 10.0
    """Playback: the server asks for audio in pieces of this size (minreq)."""
    prebuf_ms: float = 10.0
    """Playback: after an underrun, it plays again once this much is queued (not a full target)."""

    def __post_init__(self) -> None:
        if not 0 < self.request_ms <= self.target_ms or not 0 <= self.prebuf_ms <= self.target_ms:
            raise ValueError(f"inconsistent buffer attributes {self}")

    def native(self, bytes_per_ms: float, *, playback: bool) -> _BufferAttr:
        size = lambda ms: max(4, int(round(ms * bytes_per_ms / 4)) * 4)  # noqa: E731 (whole frames)
        if playback:
            return _BufferAttr(_NO_VALUE, size(self.target_ms), size(self.prebuf_ms), size(self.request_ms), _NO_VALUE)
        return _BufferAttr(_NO_VALUE, _NO_VALUE, _NO_VALUE, _NO_VALUE, size(self.target_ms))


RecordHandler = Callable[[np.ndarray | None, int, float, bool], None]
"""(samples or None for a hole the server reports, frame count, time of the first frame on
time.monotonic()'s clock, an xrun since the last block)."""
PlaybackHandler = Callable[[int, float, bool], np.ndarray]
"""(frames wanted, time the first of them will sound, an xrun since the last block) → float32 samples."""


class PulseStream:
    """One mono float32 record or playback stream on a server (blocking while it connects).

    `on_record` or `on_playback` is called on the mainloop's thread; `on_ended` once, when the
    stream or its server goes away by itself. `underflows`, `overflows` and `moves` count what
    the server reported; `frames` counts frames read or written (the stream's index)."""

    def __init__(self, *, rate: int, attr: BufferAttr, device: str = "", name: str = "companion",
                 on_record: RecordHandler | None = None, on_playback: PlaybackHandler | None = None,
                 on_ended: Callable[[], None] | None = None, timeout_s: float = 5.0) -> None:
        self._lib = lib = library()
        self.rate, self.attr, self.playback = rate, attr, on_playback is not None
        self._on_record, self._on_playback, self._on_ended = on_record, on_playback, on_ended
        self.frames = 0
        self.underflows = self.overflows = self.moves = 0
        self.wild_clocks = 0
        """Times the server's clock was too wild to be a time (CLOCK_STRAY_S); the last sane one stood in."""
        self._ahead: float | None = None
        self._xrun = False
        # Arguments of the calls made on every fragment, made once.
        self._peeked, self._peeked_size, self._usec = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_uint64()
        self._peek_refs = (ctypes.byref(self._peeked), ctypes.byref(self._peeked_size))
        self._usec_ref = ctypes.byref(self._usec)
        self._closed = False
        self.ended_why = ""
        """Once ended by itself: "server" (it died or hung up) or "device" (the device went away)."""
        self._ended_told = threading.Event()
        self._ctx = self._stream = None
        self._timers: list[threading.Thread] = []
        self._callbacks = (_CONTEXT_CB(self._context_changed), _STREAM_CB(self._stream_changed),
                           _REQUEST_CB(self._requested), _STREAM_CB(self._underflow), _STREAM_CB(self._overflow),
                           _STREAM_CB(self._moved))
        self._loop = lib.pa_threaded_mainloop_new()
        if not self._loop or lib.pa_threaded_mainloop_start(self._loop) < 0:
            raise PulseError("libpulse could not start its mainloop")
        try:
            self._connect(device.encode() or None, name.encode(), timeout_s)
        except BaseException:
            self.close()
            raise

    # --- opening (on the caller's thread) ------------------------------------------------------
    def _connect(self, device: bytes | None, name: bytes, timeout_s: float) -> None:
        lib, loop = self._lib, self._loop
        ctx_cb, stream_cb, request_cb, underflow_cb, overflow_cb, moved_cb = self._callbacks
        deadline = time.monotonic() + timeout_s
        lib.pa_threaded_mainloop_lock(loop)
        try:
            self._ctx = lib.pa_context_new(lib.pa_threaded_mainloop_get_api(loop), name)
            lib.pa_context_set_state_callback(self._ctx, ctx_cb, None)
            if lib.pa_context_connect(self._ctx, None, _CONTEXT_NOAUTOSPAWN, None) < 0:
                raise PulseError(self._error("no sound server"))
            self._wait(lambda: lib.pa_context_get_state(self._ctx), _CTX_READY, deadline, "the sound server")
            spec = _SampleSpec(_FLOAT32LE, self.rate, 1)
            self._stream = lib.pa_stream_new(self._ctx, name, ctypes.byref(spec), None)
            if not self._stream:
                raise PulseError(self._error("the server refused a stream"))
            lib.pa_stream_set_state_callback(self._stream, stream_cb, None)
            attr = self.attr.native(self.rate * 4 / 1000, playback=self.playback)
            # Not monotonic: libpulse would otherwise hold on to a wild value of its smoother
            # (CLOCK_STRAY_S) for the rest of the stream, as its docs warn; small steps back are
            # jitter the Timeline already tolerates.
            flags = _INTERPOLATE_TIMING | _NOT_MONOTONIC | _AUTO_TIMING_UPDATE | _ADJUST_LATENCY
            if self.playback:
                lib.pa_stream_set_write_callback(self._stream, request_cb, None)
                lib.pa_stream_set_underflow_callback(self._stream, underflow_cb, None)
                connected = lib.pa_stream_connect_playback(self._stream, device, ctypes.byref(attr), flags, None, None)
            else:
                lib.pa_stream_set_read_callback(self._stream, request_cb, None)
                lib.pa_stream_set_overflow_callback(self._stream, overflow_cb, None)
                connected = lib.pa_stream_connect_record(self._stream, device, ctypes.byref(attr), flags)
            lib.pa_stream_set_moved_callback(self._stream, moved_cb, None)
            if connected < 0:
                raise PulseError(self._error("the server refused the stream"))
            self._wait(lambda: lib.pa_stream_get_state(self._stream), _STREAM_READY, deadline, "the stream")
            granted = lib.pa_stream_get_buffer_attr(self._stream).contents
            self.granted = {k: getattr(granted, k) for k, _ in _BufferAttr._fields_}
            self.device = (lib.pa_stream_get_device_name(self._stream) or b"").decode(errors="replace")
        finally:
            lib.pa_threaded_mainloop_unlock(loop)

    def _wait(self, state: Callable[[], int], ready: int, deadline: float, what: str) -> None:
        """With the lock held: until `state()` is `ready` (the state callbacks signal)."""
        failed = (_CTX_FAILED, _CTX_TERMINATED) if what == "the sound server" else (_STREAM_FAILED, _STREAM_TERMINATED)
        with _wake_at(self._lib, self._loop, deadline, self._timers):
            while (now := state()) != ready:
                if now in failed:
                    raise PulseError(self._error(f"{what} failed"))
                if time.monotonic() > deadline:
                    raise PulseError(f"{what} did not answer in time")
                self._lib.pa_threaded_mainloop_wait(self._loop)

    def _error(self, what: str) -> str:
        code = self._lib.pa_context_errno(self._ctx) if self._ctx else 0
        return f"{what}: {self._lib.pa_strerror(code).decode()}" if code else what

    # --- on the mainloop's thread ---------------------------------------------------------------
    def _context_changed(self, _ctx, _data) -> None:
        self._lib.pa_threaded_mainloop_signal(self._loop, 0)
        if self._lib.pa_context_get_state(self._ctx) in (_CTX_FAILED, _CTX_TERMINATED):
            self._ended("server")

    def _stream_changed(self, _stream, _data) -> None:
        self._lib.pa_threaded_mainloop_signal(self._loop, 0)
        if self._stream and self._lib.pa_stream_get_state(self._stream) in (_STREAM_FAILED, _STREAM_TERMINATED):
            # The server still answers but ended this stream: its device went away (unplugged,
            # its module unloaded) with nowhere to move it.
            self._ended("server" if self._lib.pa_context_get_state(self._ctx) != _CTX_READY else "device")

    def _ended(self, why: str) -> None:
        if not self._closed and not self._ended_told.is_set():
            self.ended_why = why
            self._ended_told.set()
            if self._on_ended is not None:
                self._on_ended()

    def _underflow(self, _stream, _data) -> None:
        self.underflows += 1
        self._xrun = True

    def _overflow(self, _stream, _data) -> None:
        self.overflows += 1
        self._xrun = True

    def _moved(self, _stream, _data) -> None:
        self.moves += 1
        self._xrun = True  # another device: another latency, and the echo path changed
        self.device = (self._lib.pa_stream_get_device_name(self._stream) or b"").decode(errors="replace")

    def _stream_time(self) -> float | None:
        """The stream's clock (s): the frame at the device now (playback: being heard; record:
        being captured); None while the server has given no timing or gives a wild one."""
        if self._lib.pa_stream_get_time(self._stream, self._usec_ref) != 0:
            return None
        clock = stream_clock(self._usec.value, self.frames / self.rate)
        if clock is None:
            self.wild_clocks += 1
        return clock

    def _ahead_s(self) -> float | None:
        """How far the stream's count of frames is ahead of its device (s): the queued audio for
        playback, minus the queued audio for record. The last sane value stands in for a wild one."""
        clock = self._stream_time()
        if clock is not None:
            self._ahead = self.frames / self.rate - clock
        return self._ahead

    def _requested(self, _stream, nbytes: int, _data) -> None:
        try:
            if self.playback:
                self._write(nbytes // 4)
            else:
                self._read()
        except Exception:
            log.exception("a sound callback failed")

    def _read(self) -> None:
        lib, data, size = self._lib, self._peeked, self._peeked_size
        while lib.pa_stream_peek(self._stream, self._peek_refs[0], self._peek_refs[1]) == 0 and size.value:
            count = size.value // 4
            now = time.monotonic()
            ahead = self._ahead_s()
            # The first frame of this fragment is `frames` into the stream, `-ahead` s before the
            # frame the device captures now.
            at = now + ahead if ahead is not None else now - count / self.rate
            # string_at copies the fragment at once (numpy's ctypes view cost ~4x as much).
            samples = np.frombuffer(ctypes.string_at(data.value, count * 4), dtype=np.float32) \
                if data.value else None  # None: a hole, audio the server lost
            lib.pa_stream_drop(self._stream)
            xrun, self._xrun = self._xrun or samples is None, False
            self.frames += count
            self._on_record(samples, count, at, xrun)

    def _write(self, count: int) -> None:
        now = time.monotonic()
        ahead = self._ahead_s()
        at = now + ahead if ahead is not None else now
        xrun, self._xrun = self._xrun, False
        samples = np.ascontiguousarray(self._on_playback(count, at, xrun), dtype=np.float32)
        self._lib.pa_stream_write(self._stream, samples.ctypes.data, samples.size * 4, None, 0, 0)
        self.frames += samples.size

    def set_attr(self, attr: BufferAttr) -> None:
        """Ask the server for other buffer attributes (any thread but the mainloop's; does not
        wait for the answer: the server applies them within a fragment or two). The stamps stay
        exact: they come from the server's clock and the stream's index, not the fragment size."""
        lib, loop = self._lib, self._loop
        if self._closed or not loop:
            return
        lib.pa_threaded_mainloop_lock(loop)
        try:
            if self._stream and lib.pa_stream_get_state(self._stream) == _STREAM_READY:
                native = attr.native(self.rate * 4 / 1000, playback=self.playback)
                operation = lib.pa_stream_set_buffer_attr(self._stream, ctypes.byref(native), None, None)
                if operation:
                    lib.pa_operation_unref(operation)
                self.attr = attr
        finally:
            lib.pa_threaded_mainloop_unlock(loop)

    # --- closing (any thread but the mainloop's) -----------------------------------------------
    @property
    def active(self) -> bool:
        """Connected and not ended by the server."""
        return not self._closed and not self._ended_told.is_set()

    def stop(self) -> None:
        """As PortAudio's streams have it (devices.py closes with stop() then close())."""

    abort = stop

    def close(self) -> None:
        """Disconnect and free (never blocks on a stalled server: nothing here waits for it)."""
        if self._closed:
            return
        self._closed = True
        lib, loop = self._lib, self._loop
        if not loop:
            return
        lib.pa_threaded_mainloop_lock(loop)
        try:
            if self._stream:
                lib.pa_stream_disconnect(self._stream)
                lib.pa_stream_unref(self._stream)
            if self._ctx:
                lib.pa_context_disconnect(self._ctx)
                lib.pa_context_unref(self._ctx)
            self._stream = self._ctx = None
        finally:
            lib.pa_threaded_mainloop_unlock(loop)
        for timer in self._timers:
            timer.join()
        lib.pa_threaded_mainloop_stop(loop)
        lib.pa_threaded_mainloop_free(loop)
        self._loop = None


@contextlib.contextmanager
def _wake_at(lib: ctypes.CDLL, loop, deadline: float, timers: list[threading.Thread]) -> Iterator[None]:
    """While the caller waits on the mainloop (it has no timed wait): a signal at `deadline`,
    so a server that accepted the connection and then hung (SIGSTOP) cannot hold it for ever.
    The timer goes on `timers`: join them, with the lock released, before freeing the loop."""
    def wake() -> None:
        lib.pa_threaded_mainloop_lock(loop)
        lib.pa_threaded_mainloop_signal(loop, 0)
        lib.pa_threaded_mainloop_unlock(loop)

    timer = threading.Timer(max(0.0, deadline - time.monotonic()) + 0.01, wake)
    timer.daemon = True
    timers.append(timer)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def server_info(timeout_s: float = 1.0) -> str:
    """A sentence naming the server this process reaches (raises PulseError when there is none)."""
    lib = library()
    loop = lib.pa_threaded_mainloop_new()
    signal = _CONTEXT_CB(lambda _c, _d: lib.pa_threaded_mainloop_signal(loop, 0))
    timers: list[threading.Thread] = []
    lib.pa_threaded_mainloop_start(loop)
    lib.pa_threaded_mainloop_lock(loop)
    ctx = lib.pa_context_new(lib.pa_threaded_mainloop_get_api(loop), b"companion-probe")
    try:
        lib.pa_context_set_state_callback(ctx, signal, None)
        deadline = time.monotonic() + timeout_s
        if lib.pa_context_connect(ctx, None, _CONTEXT_NOAUTOSPAWN, None) < 0:
            raise PulseError(f"no sound server: {lib.pa_strerror(lib.pa_context_errno(ctx)).decode()}")
        with _wake_at(lib, loop, deadline, timers):
            while (state := lib.pa_context_get_state(ctx)) != _CTX_READY:
                if state in (_CTX_FAILED, _CTX_TERMINATED):
                    raise PulseError(f"no sound server: {lib.pa_strerror(lib.pa_context_errno(ctx)).decode()}")
                if time.monotonic() > deadline:
                    raise PulseError("the sound server did not answer in time")
                lib.pa_threaded_mainloop_wait(loop)
        return f"a PulseAudio-protocol server (protocol {lib.pa_context_get_server_protocol_version(ctx)})"
    finally:
        lib.pa_context_disconnect(ctx)
        lib.pa_context_unref(ctx)
        lib.pa_threaded_mainloop_unlock(loop)
        for timer in timers:
            timer.join()
        lib.pa_threaded_mainloop_stop(loop)
        lib.pa_threaded_mainloop_free(loop)
