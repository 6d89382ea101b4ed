"""A stream of audio blocks on one clock: where each sample of the speaker or the microphone was.

Blocks arrive at any rate, stamped with the time of their first sample (PortAudio's DAC/ADC
estimate, or exact from the sound server's own indexes); the Timeline counts samples and reads
the stamps only to find where the count broke (an xrun, a pause, a loss, another device).
"""

from __future__ import annotations

import numpy as np
import soxr

from companion.voice.sound.frames import SAMPLE_RATE

__all__ = ["RESTART_S", "SETTLE_BLOCKS", "SETTLE_TOLERANCE", "Timeline"]

RESTART_S = 1.0
"""A block stamped this far from where the stream was expected starts a new run (a device
restarted); the stream's rate changing does too."""
SETTLE_BLOCKS = 25
"""After a start or an xrun, the median stamp offset of the blocks from this many to twice
this many says where the stream is: PortAudio refills the buffer in a burst whose stamps
barely advance, and single stamps jitter by several ms (more through a sound server)."""
SETTLE_TOLERANCE = SAMPLE_RATE // 50
"""A settled median offset above 20 ms means the first stamps were a refill burst, or audio
was really lost (or silence played) in an xrun: the stream moves by it. Smaller ones are
jitter, and AEC3 follows small shifts itself."""
EXACT_TOLERANCE = SAMPLE_RATE // 125
"""With stamps from the sound server's own indexes (pa_stream_get_time), a block whose offset
from the count changed by more than 8 ms since the last steady block, after an xrun the server
reported (an underrun's pause, an overflow's loss, a move to another device), moves the stream..."""
EXACT_JUMP = SAMPLE_RATE // 50
"""A change of more than 20 ms with no xrun reported is a timing jump (EchoStats.jumps): counted,
and not followed (EXACT_JUMP_RUN). Slow changes are not followed either: the stamps of a
monitor source ran 0.5 ms/s ahead of its audio here while the echo's delay stayed put, and
following them shifted the pairing by as much (echo removal fell from 50-66 dB to 16-24)."""
EXACT_RUN = 4
"""...once this many blocks in a row say so (by their median): one late timing update is not a
move. 40-80 ms after the event, against 0.5-1 s of settling on PortAudio's stamps."""
EXACT_JUMP_RUN = 12
"""Blocks in a row for an unreported jump to count. On a loaded machine (load 8-23, busy loops
beside it) the client's interpolated clock strayed by more than 20 ms between timing updates
100-300 times a minute and came back, while the server reports every real underrun, overflow
(and hole) it causes: following such jumps would move her microphone's audio for nothing (a
backward move drops samples the ear has not had), so they are only counted."""
EXACT_SETTLE_S = 2.0
"""A stream just started on a server steps its clock while the device settles (up to ~1.9 s
on a null sink): moves in its first seconds are followed but not counted as timing jumps."""
EXACT_GRACE_S = 0.3
"""After a reported xrun the client's interpolated clock is off until the next timing update
(every 100 ms): moves in this time are the xrun's, not a jump of their own."""

def _index(at: float) -> int:
    """A PortAudio time in seconds as a sample index on the 16 kHz timeline."""
    return round(at * SAMPLE_RATE)


class Timeline:
    """Blocks at any rate, stamped with the time of their first sample, as one 16 kHz stream.

    `start` is the sample index (on the 16 kHz clock) of `samples[0]`. Between xruns a
    device neither drops nor adds samples, so each block is appended where the last one ended
    and the samples are counted; the stamps only say where the count stands. They are read
    after a start and after each xrun (the device ran dry or overflowed, and audio may have
    been lost or silence played): once settled, the median offset of SETTLE_BLOCKS stamps
    moves the stream if it is more than SETTLE_TOLERANCE (inserting silence, or dropping the
    newest unused audio). Other stamps are not followed: through a sound server they wander
    by tens of ms, and jump after an xrun, while the audio itself does not.
    """

    def __init__(self) -> None:
        self.samples = np.zeros(0, dtype=np.float32)
        self.start = 0
        self._rate = 0
        self._resampler: soxr.ResampleStream | None = None
        self._next_in = 0  # 16 kHz index where the next input block is expected to start
        self._settling = 0  # blocks until the stamps are read (0: settled)
        self._offsets: list[int] = []
        self.runs = 0
        """How many times the stream (re)started: 1 for a steady device."""
        self.moves = 0
        """How many times the stamps moved the stream (after a start or an xrun)."""
        self.jumps = 0
        """Changes of a running stream's exact stamps that no xrun announced (not followed)."""
        self._run_start = self._grace_until = self._steady = 0
        self._outside: list[int] = []  # offsets of the exact blocks in a row outside the tolerance
        self.filled: list[tuple[int, int]] = []
        """[start, end) of the silence each forward move inserted: on the far end it is silence
        the speaker played; on the near end it was never heard, and the ear must not hear it."""

    @property
    def end(self) -> int:
        return self.start + self.samples.size

    def push(self, block: np.ndarray, rate: int, at: float, *, xrun: bool = False, exact: bool = False) -> None:
        """Append `block` (`rate` Hz) whose first sample is at time `at` (time.monotonic()'s
        clock); `xrun` when the sound system flagged it (output underflow, input overflow);
        `exact` when `at` comes from the server's indexes: then every stamp is followed."""
        block = np.asarray(block, dtype=np.float32).reshape(-1)
        offset = _index(at) - self._next_in
        if self.runs == 0 or rate != self._rate or abs(offset) > RESTART_S * SAMPLE_RATE:
            self._restart(rate, _index(at))
            offset = 0
        if exact:
            offset -= self._follow(offset, _index(at), xrun)
        elif xrun:
            # Through a sound server a flagged block's stamp is often wrong and the audio went
            # on without a gap: only the stamps once the stream has settled again can move it.
            self._settling, self._offsets = 2 * SETTLE_BLOCKS, []
        elif self._settling:
            self._settling -= 1
            if self._settling < SETTLE_BLOCKS:
                self._offsets.append(offset)
            if not self._settling:
                median = int(np.median(self._offsets))
                if abs(median) > SETTLE_TOLERANCE:
                    self._move(median)
                    offset -= median
        self._next_in += round(block.size * SAMPLE_RATE / rate)
        if self._resampler is not None:
            block = self._resampler.resample_chunk(block)
        self.samples = np.concatenate([self.samples, block]) if self.samples.size else block.copy()

    def _follow(self, offset: int, stamped: int, xrun: bool) -> int:
        """Exact stamps: how far the stream moves for this block's `offset` (0: not at all)."""
        self._settling = 0
        if xrun:
            self._grace_until = stamped + int(EXACT_GRACE_S * SAMPLE_RATE)
        expected = stamped < self._grace_until or stamped - self._run_start < EXACT_SETTLE_S * SAMPLE_RATE
        change = offset - self._steady
        if abs(change) <= (EXACT_TOLERANCE if expected else EXACT_JUMP):
            self._outside, self._steady = [], offset
            return 0
        self._outside.append(change)
        if len(self._outside) < (EXACT_RUN if expected else EXACT_JUMP_RUN):
            return 0
        median, self._outside = int(np.median(self._outside)), []
        if not expected:  # counted, not followed: see EXACT_JUMP_RUN
            self.jumps += 1
            self._steady = offset
            return 0
        self._move(median)
        return median

    def _move(self, offset: int) -> None:
        """The stream really is `offset` samples later (or earlier, when negative) than counted."""
        self.moves += 1
        self._next_in += offset
        if offset > 0:
            self.filled.append((self.end, self.end + offset))
            self.samples = np.concatenate([self.samples, np.zeros(offset, dtype=np.float32)])
        else:
            keep = max(0, self.samples.size + offset)
            self.start -= max(0, -offset - self.samples.size)
            self.samples = self.samples[:keep]

    def _restart(self, rate: int, stamped: int) -> None:
        self.runs += 1
        self._rate = rate
        self._resampler = soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32") \
            if rate != SAMPLE_RATE else None
        self._next_in = self._run_start = stamped
        self._steady, self._outside = 0, []
        self._settling, self._offsets = 2 * SETTLE_BLOCKS, []
        # A resampler holds back a few ms: its first output sample still belongs at `stamped`.
        self.samples = np.zeros(0, dtype=np.float32)
        self.start = stamped

    def release(self) -> None:
        """Free the native resampler now (the stream is done): one still alive when Python exits
        makes soxr's bindings print a leak report."""
        self._resampler = None

    def is_filled(self, start: int, count: int) -> bool:
        """Whether samples [start, start + count) all lie in silence a move inserted."""
        return any(lo <= start and start + count <= hi for lo, hi in self.filled)

    def take(self, start: int, count: int) -> np.ndarray:
        """`count` samples from index `start`; silence where the stream has nothing."""
        out = np.zeros(count, dtype=np.float32)
        lo, hi = max(start, self.start), min(start + count, self.end)
        if hi > lo:
            out[lo - start:hi - start] = self.samples[lo - self.start:hi - self.start]
        return out

    def drop_before(self, index: int) -> None:
        self.filled = [(lo, hi) for lo, hi in self.filled if hi > index]
        if index > self.start:
            cut = min(index - self.start, self.samples.size)
            self.samples = self.samples[cut:]
            self.start += cut
