"""The last half-minute of what she heard, by stream time: where an utterance's voice is cut from.

Fed from the ear's frame loop (an Ear.hearers entry), so it only appends; nothing is computed
there. Times are the ear's stream seconds, as utterances are timed.
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["RecentAudio"]


class RecentAudio:
    def __init__(self, seconds: float = 30.0, rate: int = 16_000) -> None:
        self.rate = rate
        self.seconds = seconds
        self._frames: deque[tuple[float, np.ndarray]] = deque()
        """(stream seconds where the frame ends, the frame)"""

    def hear(self, frame: np.ndarray, stream_s: float) -> None:
        self._frames.append((stream_s, np.array(frame, dtype=np.float32).reshape(-1)))
        while self._frames and stream_s - self._frames[0][0] > self.seconds:
            self._frames.popleft()

    def audio(self, start_s: float, end_s: float) -> np.ndarray:
        """The samples heard from `start_s` to `end_s` (what is still kept of them)."""
        parts = []
        for frame_end, frame in list(self._frames):
            frame_start = frame_end - frame.size / self.rate
            if frame_end <= start_s or frame_start >= end_s:
                continue
            first = max(0, int(round((start_s - frame_start) * self.rate)))
            last = min(frame.size, int(round((end_s - frame_start) * self.rate)))
            parts.append(frame[first:last])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
