"""What the ear hands on and what it asks of others: the utterance heard, her voice, the pause listener."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from companion.voice.speaking.echo import PlayedLine
from companion.voice.turns.latency import TurnLatency

__all__ = ["FrameProcessor", "HerVoice", "PauseListener", "Utterance"]


class FrameProcessor(Protocol):
    """Cleans one 16 kHz frame before the VAD hears it (an echo canceller, a noise gate)."""

    def process(self, frame: np.ndarray) -> np.ndarray: ...


class HerVoice(Protocol):
    """What the ear needs to know about her own voice (the mouth's speaker)."""

    playing: bool
    recent_played: deque[PlayedLine]

    @property
    def busy(self) -> bool:
        """Something of hers is queued or playing."""


@dataclass(frozen=True)
class Utterance:
    """What the user said, with its latency marks and the pause that ended it."""

    text: str
    latency: TurnLatency
    pause_id: int | None = None
    start_s: float = 0.0
    """Stream seconds where the speech began and ended (who called her is judged on them)."""
    end_s: float = 0.0
    stopped_her: bool = False
    """It talked over her loud enough to stop her (barge-in)."""
    goes_on: bool = False
    """It went on with the utterance before, whose turn ended in a pause: `text` is both."""
    aside: bool = False
    """Words said over her that ask nothing of her ("Mm-hmm."), heard under her voice: a line of
    her transcript, never a turn."""


class PauseListener(Protocol):
    """Told about pauses, so a reply can be prepared while the user may still go on."""

    def pause_ready(self, pause_id: int, text: str) -> None:
        """The pause under way is longer than a gap between words, with its early transcript."""

    def resumed(self, pause_id: int) -> None:
        """The user went on talking: a reply prepared for that pause is stale."""

    def discarded(self, pause_id: int | None) -> None:
        """The utterance ended as nothing she should answer (silence, her own echo)."""
