"""The one thread where echo cancellation runs, between the PortAudio callbacks and the ear.

The speaker's output callback calls render() with each block it hands to the device and the
block's DAC time; the microphone's input callback calls capture() with each block and its ADC
time. Both only put the block on a queue, so no audio callback waits for the canceller. The
thread pairs and cleans them (echo_canceller.EchoCanceller) and hands each cleaned block of
16 kHz microphone audio to the consumer's `deliver` callable, which is the consumer's own
door to its event loop. The Qt thread never runs any of this.
"""

from __future__ import annotations

import copy
import logging
import queue
import threading
import time
from collections.abc import Callable

import numpy as np

from companion.voice.sound.audio import resample
from companion.voice.sound.echo_canceller import EchoCanceller, EchoSettings, EchoStats
from companion.voice.sound.frames import SAMPLE_RATE

log = logging.getLogger(__name__)

Deliver = Callable[[np.ndarray], None]

SILENCE_BATCH_S = 0.1
"""Blocks of pure silence from her speaker (she has nothing to say: 50-100 a second while she
waits for a call) go to the canceller's thread together, one batch per 100 ms, stamped with the
first one's time: the same samples on the same timeline, a tenth of the thread's wake-ups.
Nothing waits on them: a microphone frame whose far end has not arrived yet is paired with
silence, which is what it was; a block with sound in it sends the held silence first."""
UNBATCHED_AFTER_XRUN_S = 0.5
"""After an underrun or a move, each block goes on its own for this long: the timeline reads
every stamp to follow where the stream went (timeline.EXACT_GRACE_S, EXACT_RUN)."""
BATCH_GAP_S = 0.05
"""A silent block stamped this far from where the held silence ends is another run (a reopened
stream): the held silence goes first, so the timeline sees the break."""
FAR_WAIT_S = 0.25
"""While she speaks, a microphone frame waits at most this long for the speaker's audio of the
same moment. Beside busy cores the speaker's thread ran late: a third of her blocks with sound
reached this thread after the microphone's of the same moment (up to 110 ms after), the
canceller had paired those with silence, and her echo came through at 5-17 dB where it is
removed by 50-70 (open speakers, load 10-23): she stopped herself in 7 of 8 replies. While she
is quiet nothing waits: her silence may come in batches (SILENCE_BATCH_S), and a frame without
its far end is paired with silence, which is what it was."""
EXPECT_S = 0.5
"""A line queued to play makes the microphone wait for the speaker from then on (its onset may
reach the speaker's thread late too); if nothing sounds within this long, it was stopped."""


class EchoWorker:
    """Owns an EchoCanceller and its thread. `deliver` receives cleaned 16 kHz blocks."""

    def __init__(self, settings: EchoSettings | None = None, *, deliver: Deliver | None = None) -> None:
        self._canceller = EchoCanceller(settings)
        self._settings = self._canceller.settings
        self._deliver = deliver
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        self._failed = False
        self._lock = threading.Condition()  # guards the stats snapshot; notified as it moves
        self._stats = EchoStats()
        # Held silence, on the speaker's thread only (render): its length, rate, stamp, exactness.
        self._held, self._held_rate, self._held_at, self._held_exact = 0, 0, 0.0, False
        self._unbatched_until = 0.0
        # On the thread: whether her speaker is sounding (its last block was not silence), until
        # when a queued line is expected, and since when cleaned frames wait for the far end.
        self._far_sounding = False
        self._expect_until = 0.0
        self._held_since: float | None = None
        self.far_blocks = self.far_samples = 0
        """Far-end blocks (and their samples) the thread has taken: its wake-ups for the speaker."""
        self._thread = threading.Thread(target=self._run, name="echo-canceller", daemon=True)
        self._thread.start()

    @property
    def settings(self) -> EchoSettings:
        return self._settings

    @property
    def cancelling(self) -> bool:
        """True while her voice is being removed from the microphone."""
        return self._settings.echo_cancellation and not self._failed and not self._closed

    @property
    def settled(self) -> bool:
        """Her echo is removed as the module has learned it (EchoStats.settled), or not cancelled."""
        return not self.cancelling or self._stats.settled

    def connect(self, deliver: Deliver) -> None:
        """Where cleaned microphone audio goes (set by the microphone before its stream starts)."""
        self._deliver = deliver

    # --- called from PortAudio's threads: queue only --------------------------------------
    def render(self, block: np.ndarray, rate: int, dac_time: float, xrun: bool = False, *,
               exact: bool = False, silent: bool = False) -> None:
        """A block the speaker is handing to the device, with the time its first sample sounds;
        `xrun` when the sound system reported an underflow (or a move) with it; `exact` when the
        time comes from the sound server's own indexes rather than PortAudio's estimate;
        `silent` when it is all zeros (then it may wait for others: SILENCE_BATCH_S; only its
        size is read, so the caller may reuse it at once)."""
        if self._closed:
            return
        if xrun:
            self._unbatched_until = dac_time + UNBATCHED_AFTER_XRUN_S
        if self._held and (not silent or xrun or rate != self._held_rate or exact != self._held_exact
                           or abs(dac_time - self._held_at - self._held / rate) > BATCH_GAP_S):
            self._flush_silence()
        if not silent or xrun or dac_time < self._unbatched_until:
            audio = block if not silent else np.zeros(block.size, dtype=np.float32)
            self._queue.put(("far", audio, rate, dac_time, xrun, exact, silent))
            return
        if not self._held:
            self._held_rate, self._held_at, self._held_exact = rate, dac_time, exact
        self._held += block.size
        if self._held >= rate * SILENCE_BATCH_S:
            self._flush_silence()

    def _flush_silence(self) -> None:
        """On the speaker's thread: the held silence goes to the canceller as one block."""
        held, self._held = self._held, 0
        self._queue.put(("far", np.zeros(held, dtype=np.float32), self._held_rate, self._held_at, False,
                         self._held_exact, True))

    def capture(self, block: np.ndarray, rate: int, adc_time: float, xrun: bool = False, *,
                exact: bool = False) -> None:
        """A microphone block, with the time its first sample was captured (`xrun`: overflow)."""
        if not self._closed:
            self._queue.put(("near", block, rate, adc_time, xrun, exact))

    # --- called from the event loop ---------------------------------------------------------
    def expect_sound(self) -> None:
        """A line was queued to play: from now on the microphone waits for the speaker (EXPECT_S)."""
        if not self._closed:
            self._queue.put(("expect", time.monotonic()))

    def configure(self, settings: EchoSettings) -> None:
        """Switch echo cancellation, noise suppression or the high-pass filter; applies at once."""
        self._settings = settings
        self._queue.put(("configure", settings))

    def stats(self) -> EchoStats:
        """A copy of the running totals (take two and subtract to measure a stretch of time)."""
        with self._lock:
            return copy.copy(self._stats)

    def stats_after(self, frames: int, timeout_s: float) -> EchoStats:
        """Blocking: the totals once `frames` microphone frames have been processed in all (or
        when `timeout_s` has passed, or the worker closed). On a busy machine the thread runs
        seconds behind the microphone: totals read at once would miss what was just heard."""
        with self._lock:
            self._lock.wait_for(lambda: self._stats.frames >= frames or self._closed, timeout_s)
            return copy.copy(self._stats)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._lock:
            self._lock.notify_all()
        self._queue.put(None)
        self._thread.join(timeout=5)

    # --- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        while (item := self._next()) is not None:
            kind = item[0]
            try:
                if kind == "far":
                    self.far_blocks += 1
                    self.far_samples += item[1].size
                    self._canceller.render(item[1], item[2], item[3], xrun=item[4], exact=item[5])
                    self._far_sounding = not item[6]
                    if self._far_sounding:
                        self._expect_until = 0.0
                elif kind == "near":
                    self._near(item[1], item[2], item[3], item[4], item[5])
                elif kind == "expect":
                    self._expect_until = item[1] + EXPECT_S
                elif kind == "configure":
                    self._canceller.configure(item[1])
                if kind != "near" and self._held_since is not None and not self._failed:
                    self._hand_on(self._canceller.drain(wait_for_far=self._waits_for_far()))
            except Exception:
                # Never lose the microphone: pass it through raw and say so once.
                if not self._failed:
                    log.exception("echo cancellation failed; the microphone goes through uncleaned")
                self._failed = True
                if kind == "near" and self._deliver is not None:
                    self._deliver(_at_16k(item[1], item[2]))
        self._canceller.release()

    def _next(self):
        """The next item; ("late",) when frames waiting for the far end have waited FAR_WAIT_S."""
        if self._held_since is None:
            return self._queue.get()
        try:
            return self._queue.get(timeout=max(0.0, self._held_since + FAR_WAIT_S - time.monotonic()))
        except queue.Empty:
            return ("late",)

    def _waits_for_far(self) -> bool:
        """Whether cleaned frames wait for the speaker now: she is sounding (or a line is about to),
        and the oldest waiting frame has not waited FAR_WAIT_S yet."""
        now = time.monotonic()
        if not self._settings.echo_cancellation or not (self._far_sounding or now < self._expect_until):
            return False
        return self._held_since is None or now < self._held_since + FAR_WAIT_S

    def _near(self, block: np.ndarray, rate: int, adc_time: float, xrun: bool, exact: bool) -> None:
        if self._failed:
            if self._deliver is not None:
                self._deliver(_at_16k(block, rate))
            return
        self._hand_on(self._canceller.capture(block, rate, adc_time, xrun=xrun, exact=exact,
                                              wait_for_far=self._waits_for_far()))

    def _hand_on(self, clean: np.ndarray) -> None:
        """Publish the totals and deliver what was cleaned; note since when frames wait."""
        if not self._canceller.waiting:
            self._held_since = None
        elif self._held_since is None:
            self._held_since = time.monotonic()
        with self._lock:
            self._stats = copy.copy(self._canceller.stats)
            self._lock.notify_all()
        if clean.size and self._deliver is not None:
            self._deliver(clean)


def _at_16k(block: np.ndarray, rate: int) -> np.ndarray:
    return resample(block, rate, SAMPLE_RATE)
