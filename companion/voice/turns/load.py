"""Is her hearing keeping up? Judged from measured lateness, so that optional work goes first.

Her two cores are shared by the echo canceller, the VAD and endpointer on the event loop, the
recogniser, the turn model, the wake-word detector and piper (bench/core_budget.py measures
each). Under load, work is dropped in this order, and the end-of-turn path never waits:

1. Partial transcripts (PartialPacer below): never queued; rarer when the last one took long
   (they keep to PARTIAL_SHARE of one core); none while the ear reads its frames late; and the
   transcript a pause asks for stops one under way (the engine's own terminate flag).
2. Turn-model checks: one at a time per pause; a check due while the last still runs is
   skipped (turn_end.TurnWatch), and the patience's silence ends the turn without it.
3. Piper, past the first words of a reply, yields to the window, the event loop and the echo
   canceller: its thread runs 10 nice steps lower (models/thread.py). The recogniser and the
   turn model do not: the end of a turn waits on them (at +10 beside a busy process their
   checks took up to ~0.9 s).

Never dropped: the echo canceller, the VAD and endpointer, the early transcript at each pause
and the final one (the end-of-turn path), and the synthesis of what she says.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

__all__ = ["LATE_S", "PARTIAL_SHARE", "PartialPacer"]

PARTIAL_SHARE = 0.5
"""Partial transcripts may keep at most half of one core busy: after one that took 0.4 s the
next waits 0.8 s, so the rest of her hearing and the machine's other work keep the other half."""
LATE_S = 0.2
"""The ear is behind when it finishes a frame this long after the frame's audio ended (six
32 ms frames). Frames reach it in bursts through PulseAudio and the echo canceller: in
bench/core_budget.py at a load of 2-5 the lateness had a median of 19-48 ms and a p95 of
36-73 ms; above 0.2 s the event loop itself was held up, or the ear was waiting on a
transcript at the end of a turn."""


@dataclass
class PartialPacer:
    """When the ear may start a partial transcript: it says no while the ear is behind, and
    spaces them so that they use at most `share` of one core. Times are seconds on `clock`
    (time.monotonic by default; a test drives its own)."""

    every_s: float
    """The steady pace while the machine keeps up (ear.PARTIAL_EVERY_S)."""
    share: float = PARTIAL_SHARE
    late_s: float = LATE_S
    clock: Callable[[], float] = time.monotonic
    late_by_s: float = 0.0
    """How far behind real time the ear finished its newest frame."""
    last_took_s: float = 0.0
    """How long the last partial transcript took, from its start to its answer."""
    started: int = 0
    """Partial transcripts started (for the bench)."""
    held_late: int = 0
    """Frames at which one was due but the ear was behind."""
    held_slow: int = 0
    """Frames at which one was due at the steady pace but the last one's cost spaced it out."""
    _origin: float | None = field(default=None, repr=False)
    _timeline: Hashable = field(default=None, repr=False)
    _started_at: float | None = field(default=None, repr=False)

    def frame_heard(self, stream_s: float, timeline: Hashable = None) -> None:
        """The ear has just finished the frame whose audio ends at `stream_s` (seconds since its
        source opened; `timeline` changes when the stream starts over). The earliest any frame
        was ever finished, relative to its audio, is taken as on time (a late start only makes
        it judge more kindly); the newest frame's lateness is measured from there."""
        origin = self.clock() - stream_s
        if self._origin is None or timeline != self._timeline or origin < self._origin:
            self._origin, self._timeline = origin, timeline
        self.late_by_s = origin - self._origin

    @property
    def behind(self) -> bool:
        return self.late_by_s > self.late_s

    def may_start(self, since_last_s: float) -> bool:
        """Whether a partial may start now, `since_last_s` seconds of audio after the last one
        started (or the speech began)."""
        if since_last_s < self.every_s:
            return False
        if self.behind:
            self.held_late += 1
            return False
        if since_last_s < self.last_took_s / self.share:
            self.held_slow += 1
            return False
        return True

    def partial_started(self) -> None:
        self.started += 1
        self._started_at = self.clock()

    def partial_done(self) -> None:
        """The last partial answered, was stopped or failed: what it took spaces the next."""
        if self._started_at is not None:
            self.last_took_s = self.clock() - self._started_at
            self._started_at = None
