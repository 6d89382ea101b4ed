"""Per-turn latency: when each stage of a voice turn finished, logged as milliseconds."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

STAGES = (
    ("end_of_speech_wait", "speech_end", "utterance_end"),
    ("transcription", "utterance_end", "transcribed"),
    ("brain_first_token", "transcribed", "first_token"),
    ("first_sentence_synthesized", "first_token", "first_synthesized"),
    ("first_audio_out", "first_synthesized", "first_audio"),
    ("total", "speech_end", "first_audio"),
)


@dataclass
class TurnLatency:
    """time.monotonic() marks for one turn; unset marks are None."""

    heard: str = ""
    speech_end: float | None = None
    utterance_end: float | None = None
    transcribed: float | None = None
    first_token: float | None = None
    first_synthesized: float | None = None
    first_audio: float | None = None
    early_transcript_ready: bool = False
    marks: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str, when: float | None = None) -> None:
        """Set a mark once (later calls keep the first time)."""
        if getattr(self, name) is None:
            setattr(self, name, time.monotonic() if when is None else when)

    def stages_ms(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name, start, end in STAGES:
            a, b = getattr(self, start), getattr(self, end)
            out[name] = round((b - a) * 1000, 1) if a is not None and b is not None else None
        return out

    def log(self) -> None:
        stages = " ".join(f"{k}={v}ms" for k, v in self.stages_ms().items() if v is not None)
        log.info("turn latency (%s, early transcript %s): %s", self.heard[:40],
                 "ready" if self.early_transcript_ready else "still running", stages)
