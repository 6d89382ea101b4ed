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
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from companion.errors import CompanionError, Stage

__all__ = ["BUNDLED_WAKE_WORDS", "DEFAULT_WAKE_WORD", "WAKE_RULES", "WakeDetector", "WakeRule", "WakeWordThread",
           "wake_phrase"]

log = logging.getLogger(__name__)

BUNDLED_WAKE_WORDS: dict[str, str] = {
    "okay_nabu": "Okay Nabu",
    "hey_jarvis": "Hey Jarvis",
    "hey_mycroft": "Hey Mycroft",
    "alexa": "Alexa",
}
"""The models inside the pymicro-wakeword wheel, by setting name, with what to say."""

DEFAULT_WAKE_WORD = "okay_nabu"



@dataclass(frozen=True)
class WakeRule:
    """When a bundled model's score counts as the wake word."""

    threshold: float
    """The model's averaged score must be above this ..."""
    sustain: int
    """... for this many of its outputs in a row (one every 30 ms): a near miss peaks, the
    word itself holds."""


WAKE_RULES: dict[str, WakeRule] = {
    "okay_nabu": WakeRule(0.90, 8),
    "hey_jarvis": WakeRule(0.97, 2),
    "hey_mycroft": WakeRule(0.95, 3),
    "alexa": WakeRule(0.90, 2),
}
"""Calibrated by bench/wake_calibration.py on a negative set of near misses (\"Okay, now move
the table\", \"Hey, my crop failed\", \"Alexandria\", ...) in 16 espeak-ng voices, none hers,
against the phrase in the same voices at two speeds and hers (bench/RESULTS.md has the table).
One output above the model's own cut-off (0.85), the old rule, woke "okay_nabu" on 17 of 368
negatives; at 0.90 held for 8 outputs none did (the closest held 6: "Okay, now move the table"),
and 22 of 33 true calls still did (26 before). "hey_mycroft" at its own 0.95 let one through
("Hey, my crop failed"), held for 3 none; the other two models' cut-offs already left no
negative above them, and a short hold keeps a lone spike from counting."""

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
        self.rule = WAKE_RULES[name]
        self._stride = max(1, int(self._model.stride))
        self._fed = 0
        """Features given to the model: it scores every `_stride`-th and returns 0.0 between."""
        self._held = 0
        """Outputs in a row above the threshold so far."""
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
        return self.rule.threshold

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
        # Each 10 ms feature is given; the model scores every third (placed at the frame's end, ≤ 32 ms late).
        for feature in features:
            score = self._model.process_streaming_prob(feature)
            self._fed += 1
            if score is None or self._fed % self._stride:
                continue  # between two of its outputs the model says 0.0: no score at all
            self._best = max(self._best, score)
            self._held = self._held + 1 if score > self.rule.threshold else 0
            if self._held >= self.rule.sustain and not 0 <= stream_s - self._last_wake < REFRACTORY_S:
                self._last_wake = stream_s
                self._held = 0
                self.detections.append((stream_s, score))
                log.info("heard the wake word %s at %.2f s (score %.3f)", self.name, stream_s, score)
                self._on_wake(stream_s, score)
