"""The wake-word detector: microWakeWord on its own thread, fed the echo-cancelled microphone.

The ear hands it every frame it hears (after the echo canceller, so her own voice saying the
wake word is already gone) through `feed`, which only queues. The thread turns frames into
features and scores, and reports each detection, in the ear's stream seconds, to `on_wake`
(called on the detector's thread: the caller's own door to its event loop).

pymicro-wakeword was chosen over pyopen-wakeword: its code and its models are Apache-2.0
(openWakeWord's pretrained models are CC BY-NC-SA 4.0, no commercial use), and it measured
~0.3 % of a core against ~2.3 % (bench/addressed.py).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Protocol

import numpy as np

from companion.errors import CompanionError, Stage

__all__ = ["BUNDLED_WAKE_WORDS", "DEFAULT_WAKE_WORD", "WakeDetector", "WakeWordThread", "wake_phrase"]

log = logging.getLogger(__name__)

BUNDLED_WAKE_WORDS: dict[str, str] = {
    "okay_nabu": "Okay Nabu",
    "hey_jarvis": "Hey Jarvis",
    "hey_mycroft": "Hey Mycroft",
    "alexa": "Alexa",
}
"""The models inside the pymicro-wakeword wheel, by setting name, with what to say."""

DEFAULT_WAKE_WORD = "okay_nabu"

CUTOFF_FLOOR = 0.92
"""The averaged score a detection needs, at least (each model also has its own cut-off:
okay_nabu 0.85, alexa 0.9, hey_mycroft 0.95, hey_jarvis 0.97). At okay_nabu's 0.85, "Okay,
okay, I'll do the dishes" in espeak-ng voices scored 0.84-0.87 and woke her 3 times in 30
minutes of room talk (bench/addressed.py), while "Okay Nabu" scored 0.97-1.0 in every voice
the model accepts at all."""

REFRACTORY_S = 2.0
"""One wake word is one detection: the model's averaged score stays above its cut-off for
a few windows after the word."""


def wake_phrase(name: str) -> str:
    return BUNDLED_WAKE_WORDS.get(name, name.replace("_", " ").title())


class WakeDetector(Protocol):
    """Hears the wake word in a stream of 16 kHz float32 frames (microWakeWord's features are for 16 kHz)."""

    def feed(self, frame: np.ndarray, stream_s: float) -> None:
        """The frame that ends at stream time `stream_s` (must not block)."""


class WakeWordThread:
    """A bundled microWakeWord model on its own thread. `on_wake(stream_s, score)` is called on
    that thread for each detection; `best` is the highest score seen since `take_best()`."""

    def __init__(self, name: str, on_wake: Callable[[float, float], None]) -> None:
        if name not in BUNDLED_WAKE_WORDS:
            raise CompanionError("wake-word-unknown",
                                 f"I don't know the wake word {name!r}: choose one of "
                                 f"{', '.join(BUNDLED_WAKE_WORDS)} in Settings → Voice.", stage=Stage.HEARING)
        from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

        self.name = name
        self._model = MicroWakeWord.from_builtin(Model(name))
        self._features = MicroWakeWordFeatures()
        self._on_wake = on_wake
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._heard_until = 0.0
        self._progress = threading.Condition()
        self._best = 0.0
        self._last_wake = -REFRACTORY_S
        self.detections: list[tuple[float, float]] = []
        """(stream seconds, score) of every detection, her own voice's included."""
        self.cpu_s = 0.0
        """CPU seconds the detector's thread has used (the bench's measure)."""
        self._thread = threading.Thread(target=self._run, name=f"wake-word-{name}", daemon=True)
        self._thread.start()

    @property
    def cutoff(self) -> float:
        return max(float(self._model.probability_cutoff), CUTOFF_FLOOR)

    def feed(self, frame: np.ndarray, stream_s: float) -> None:
        self._queue.put((frame, stream_s))

    def wait_until(self, stream_s: float, timeout: float = 2.0) -> bool:
        """Block until the frames up to `stream_s` have been scored (a file is read faster
        than the thread may keep up); False on timeout."""
        with self._progress:
            return self._progress.wait_for(lambda: self._heard_until >= stream_s - 1e-6, timeout)

    def take_best(self) -> float:
        best, self._best = self._best, 0.0
        return best

    def close(self) -> None:
        self._queue.put(None)

    def _run(self) -> None:
        import time

        started = time.thread_time()
        while (item := self._queue.get()) is not None:
            frame, stream_s = item
            try:
                self._score(frame, stream_s)
            except Exception:
                log.exception("the wake-word detector failed on a frame")
            self.cpu_s = time.thread_time() - started
            with self._progress:
                self._heard_until = stream_s
                self._progress.notify_all()
        self._model.close()

    def _score(self, frame: np.ndarray, stream_s: float) -> None:
        pcm = (np.clip(frame, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        features = list(self._features.process_streaming(pcm))
        # Each 10 ms feature is scored; a detection is placed at the frame's end (≤ 32 ms late).
        for feature in features:
            score = self._model.process_streaming_prob(feature)
            if score is None:
                continue
            self._best = max(self._best, score)
            if score > self.cutoff and not 0 <= stream_s - self._last_wake < REFRACTORY_S:
                self._last_wake = stream_s
                self.detections.append((stream_s, score))
                log.info("heard the wake word %s at %.2f s (score %.3f)", self.name, stream_s, score)
                self._on_wake(stream_s, score)

