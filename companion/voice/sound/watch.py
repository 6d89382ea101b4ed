"""The sound server watched: a microphone or speaker that goes quiet is noticed, said once, and reopened.

When the sound server (PulseAudio, PipeWire's pulse) dies, PortAudio ends both streams at once
(their finished callbacks run); when it stalls, their callbacks simply stop coming. Either way
nothing raises: without this watch her ear waits for a block for ever and her mouth for a
sentence to finish. The watch detaches the streams (a line waiting to play ends unplayed, so
the turn ends and its reply stays as text), says so in one sentence on the bus (the banner in
the window, `[error]` in the terminal), and tries to reopen them with a backoff: PortAudio is
re-initialised so it looks for the server again (a stream straight on the server, pulse_devices,
connects afresh by itself). Once both streams deliver blocks again she
says she can hear again. The devices keep their identity, so her ear, her mouth and the echo
canceller go on with the same objects (the canceller restarts its timeline on the gap by itself).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence

from companion.events import (
    ErrorCleared,
    ErrorOccurred,
    EventBus,
    ListeningChanged,
    Speak,
    SpeechKind,
    turn_scope,
)
from companion.voice.sound.devices import DeviceSink, DeviceSource, reinitialise_portaudio

__all__ = ["BACKOFF_S", "LOST_CODE", "STALL_S", "SoundWatch", "lost_sentence"]

log = logging.getLogger(__name__)

CHECK_S = 0.25
"""How often a stall is looked for (a death is told at once by PortAudio)."""
STALL_S = 4.0
"""No block for this long from a stream that delivers one every 20-32 ms: the server stalled.
Not the ~1 s one might expect: through PulseAudio an output underrun (a busy machine) is
recovered with a gap of ~2 s in the callbacks (measured: 1.9 s after a 0.5 s hiccup), and
that is no reason to drop her devices. A server that dies is told at once, whatever this is."""
FIRST_BLOCK_S = 6.0
"""A stream just opened has this long to deliver its first block and settle (~1.5 s through
PulseAudio; the first stall it can be blamed for ends this long after it opened)."""
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 10.0)
"""Seconds before each reopening attempt; the last repeats (a reopen costs ~40 ms, so waiting
for a server that never comes back is no load)."""
LOST_CODE = "sound_server_lost"
"""The ErrorOccurred code of the one notice (stage "audio": the window's audio banner)."""


def lost_sentence(how: str) -> str:
    """What she says (in text: she has no voice left) when the sound server `how` ("stopped"),
    or when the device itself went away (`how` "the microphone went away", "the speaker ...")."""
    what = how if how.startswith("the ") else f"the sound server {how}"
    return f"I lost the sound system ({what}): I'll reconnect by myself when it's back. Type to me meanwhile."


def _ended_how(device: DeviceSource | DeviceSink) -> str:
    """Why a stream ended: its server stopped, or (straight on the server) its device went away."""
    if getattr(device._stream, "ended_why", "") == "device":
        return f"the {'microphone' if isinstance(device, DeviceSource) else 'speaker'} went away"
    return "stopped"


class SoundWatch:
    """Watches a microphone and/or speaker; run() until close(). `attempts` counts reopenings tried."""

    def __init__(self, bus: EventBus, *, source: DeviceSource | None = None, sink: DeviceSink | None = None,
                 backoff: Sequence[float] = BACKOFF_S, stall_s: float = STALL_S) -> None:
        self._bus = bus
        self._source, self._sink = source, sink
        self._devices: list[DeviceSource | DeviceSink] = [d for d in (sink, source) if d is not None]
        self._backoff = tuple(backoff)
        self._stall_s = stall_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._trouble = asyncio.Event()
        self._closed = asyncio.Event()
        self._closing_old: threading.Thread | None = None
        self.lost = False
        """The devices are detached (the sound server is gone) and not yet back."""
        self.attempts: list[float] = []
        """time.monotonic() of each reopening tried since the server was last lost."""
        self.on_attempt: list[Callable[[bool], None]] = []
        """Told after each reopening tried (True: it worked)."""
        self.on_lost: list[Callable[[], None]] = []
        """Told when the devices are found gone (the session drops the utterance in progress)."""

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        for device in self._devices:
            device.on_ended = self._ended_elsewhere
        # A stream may have ended between opening and now (the terminal prints its ready line first).
        self._trouble.set()
        while not self._closed.is_set():
            how = await self._trouble_found()
            if how is None:
                return
            await self._recover(how)

    def close(self) -> None:
        self._closed.set()
        for device in self._devices:
            device.on_ended = None

    # --- noticing ------------------------------------------------------------------------------
    def _ended_elsewhere(self) -> None:
        """On PortAudio's thread: a stream stopped by itself (its server died)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._trouble.set)

    async def _trouble_found(self) -> str | None:
        """Waits until a stream ends ("stopped") or stalls ("stopped answering"); None once closed."""
        while not self._closed.is_set():
            try:
                await asyncio.wait_for(self._trouble.wait(), CHECK_S)
            except TimeoutError:
                if self._stalled():
                    return "stopped answering"
                continue
            self._trouble.clear()
            ended = [device for device in self._devices if device.ended]
            if ended:
                return min((_ended_how(device) for device in ended), key=lambda how: how != "stopped")
        return None

    def _stalled(self) -> bool:
        now = time.monotonic()
        for device in self._devices:
            if not device.attached:
                continue
            # Through PulseAudio a new stream delivers a burst of blocks, then none for ~1.5 s,
            # then one every block: a stall counts only once it has had time to settle.
            last = max(device.last_block_at, device.opened_at + FIRST_BLOCK_S - self._stall_s)
            if now - last > self._stall_s:
                return True
        return False

    # --- recovering ----------------------------------------------------------------------------
    async def _recover(self, how: str) -> None:
        log.warning("the sound server %s; detaching the microphone and speaker", how)
        self._detach_all()
        self.lost, self.attempts = True, []
        with turn_scope(0):  # about her devices, not the turn that was running
            self._bus.emit(ErrorOccurred("audio", LOST_CODE, lost_sentence(how)))
            if self._source is not None:
                self._bus.emit(ListeningChanged(False))
        for hook in self.on_lost:
            hook()
        for attempt in itertools.count():
            delay = self._backoff[min(attempt, len(self._backoff) - 1)]
            try:
                await asyncio.wait_for(self._closed.wait(), delay)
                return
            except TimeoutError:
                pass
            worked = await self._try_reopen()
            for hook in self.on_attempt:
                hook(worked)
            if worked:
                break
        self.lost = False
        self._trouble.clear()
        log.warning("the sound server is back after %d attempts", len(self.attempts))
        with turn_scope(0):
            if self._source is not None:
                self._bus.emit(ListeningChanged(True))
            self._bus.emit(ErrorCleared("audio", LOST_CODE))
            self._bus.emit(Speak(SpeechKind.SAY, "The sound system is back: I can hear you again."
                                 if self._source is not None else "The sound system is back."))

    def _detach_all(self) -> None:
        streams = [s for s in (device.detach() for device in self._devices) if s is not None]
        # Closing a stream of a stalled server blocks until it answers or dies: in a thread of
        # its own (a daemon, so a server that never answers never holds her exit).
        self._closing_old = _in_daemon_thread(lambda: [_abort(s) for s in streams], "close-sound-streams")

    async def _try_reopen(self) -> bool:
        self.attempts.append(time.monotonic())
        if self._closing_old is not None and self._closing_old.is_alive():
            return False  # the old streams are still stuck in a stalled server
        done = self._loop.create_future()

        def reopen() -> None:
            try:
                if any(device.backend == "portaudio" for device in self._devices):
                    reinitialise_portaudio()  # a stream on the server itself connects afresh anyway
                for device in self._devices:
                    device.reopen()
                error = None
            except Exception as exc:  # the server not back yet: no devices, or a stream refused
                error = exc
            self._loop.call_soon_threadsafe(lambda: done.done() or done.set_result(error))

        _in_daemon_thread(reopen, "reopen-sound")
        error = await done
        if error is not None:
            log.info("the sound server is not back yet: %s", error)
            self._detach_all()
            return False
        # Open is not enough: the server must deliver blocks (a first one takes ~1.5 s).
        deadline = time.monotonic() + FIRST_BLOCK_S
        while not all(device.last_block_at for device in self._devices):
            if time.monotonic() > deadline or not all(d.attached and not d.ended for d in self._devices):
                log.info("the sound streams opened but delivered nothing")
                self._detach_all()
                return False
            try:
                await asyncio.wait_for(self._closed.wait(), CHECK_S)
                return False
            except TimeoutError:
                pass
        return True


def _abort(stream) -> None:
    try:
        stream.abort()
        stream.close()
    except Exception:
        log.debug("closing a dead stream failed", exc_info=True)


def _in_daemon_thread(work: Callable[[], object], name: str) -> threading.Thread:
    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    return thread
