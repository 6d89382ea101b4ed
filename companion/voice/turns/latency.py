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
    verdicts: list = field(default_factory=list)
    """The turn model's answers at this turn's last pause (turn_end.Verdict), in order."""
    first_fragment: str = ""
    """The first piece of her reply that was synthesized, and how long its synthesis took."""
    first_fragment_synth_ms: float | None = None
    prepared_in_time: bool | None = None
    """The reply's first sound was ready when the turn was confirmed (None: not prepared)."""
    marks: dict[str, float] = field(default_factory=dict)
    logged: bool = False

    def mark(self, name: str, when: float | None = None) -> None:
        """Set a mark once (later calls keep the first time); her first sound completes the
        turn's report, which then goes to the log (a live session has no other moment)."""
        if getattr(self, name) is None:
            setattr(self, name, time.monotonic() if when is None else when)
            if name == "first_audio":
                self.log()

    def stages_ms(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name, start, end in STAGES:
            a, b = getattr(self, start), getattr(self, end)
            # A stage done before the one before it ended (a prepared reply) cost no wait: 0.
            out[name] = round(max(0.0, b - a) * 1000, 1) if a is not None and b is not None else None
        return out

    def report(self) -> dict:
        """Everything about this turn's timing, as plain data (for --latency and the bench)."""
        return {
            "heard": self.heard,
            "pause_ms": self.stages_ms()["end_of_speech_wait"],
            "verdicts": [v.as_dict() for v in self.verdicts],
            "first_fragment": self.first_fragment,
            "first_fragment_synth_ms": self.first_fragment_synth_ms,
            "prepared_in_time": self.prepared_in_time,
            "early_transcript_ready": self.early_transcript_ready,
            "stages_ms": self.stages_ms(),
            "after_speech_end_ms": self.after_speech_end_ms(),
        }

    def after_speech_end_ms(self) -> dict[str, float]:
        """When each mark was set, in ms after the end of speech (a prepared reply's marks can
        come before the end of the turn: that is the time the pause hid)."""
        if self.speech_end is None:
            return {}
        names = ("utterance_end", "transcribed", "first_token", "first_synthesized", "first_audio")
        return {name: round((getattr(self, name) - self.speech_end) * 1000, 1)
                for name in names if getattr(self, name) is not None}

    def summary(self) -> str:
        """One line: the pause, each verdict, the first fragment's synthesis and every stage."""
        stages = " ".join(f"{k}={v:.0f}ms" for k, v in self.stages_ms().items() if v is not None)
        verdicts = ", ".join(
            f"{v.silence_ms:.0f}ms p={v.probability:.2f} words-{v.words}"
            f"{'' if v.text is None else f' meaning={v.text:.3f} ({v.text_ms:.0f}ms)'}"
            f"{'' if v.bar is None else f' bar={v.bar:.2f}'}"
            f" ({v.model_ms:.0f}ms) {'done' if v.complete else 'wait'}" for v in self.verdicts
        ) or "none (fixed silence)"
        fragment = (f"first fragment {self.first_fragment[:30]!r} in {self.first_fragment_synth_ms:.0f}ms; "
                    if self.first_fragment_synth_ms is not None else "")
        prepared = {None: "", True: "prepared in time; ", False: "prepared late; "}[self.prepared_in_time]
        return f"turn checks: {verdicts}; {fragment}{prepared}{stages}"

    def log(self) -> None:
        """Once per turn."""
        if self.logged:
            return
        self.logged = True
        log.info("turn latency (%s, early transcript %s): %s", self.heard[:40],
                 "ready" if self.early_transcript_ready else "still running", self.summary())
