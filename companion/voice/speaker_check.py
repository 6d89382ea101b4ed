""""Test my speakers": she says a short line and measures how much of it came back into the
microphone, before and after echo cancellation, in dB and in a sentence a person understands."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import numpy as np

from companion.voice.sound.audio import AudioSink
from companion.voice.sound.echo_canceller import EchoStats, db
from companion.voice.sound.echo_worker import EchoWorker
from companion.voice.speaking.tts import Synthesizer

TEST_LINE = "This is a speaker test. One, two, three. If you can hear me, my voice works."
TAIL_S = 0.6
"""Silence played after the line, so its echo (speaker buffer, room, microphone buffer) is in."""
CAUGHT_UP = 0.9
"""Share of the line's length in 10 ms microphone frames the canceller must have processed
before the check reads its totals (the microphone's buffer holds the rest)."""
CATCH_UP_S = 10.0
"""How long the check waits for the canceller to catch up (it only lags on a busy machine)."""
HEARD_NOTHING_DB = -45.0
"""Below this the microphone hardly hears her (a headset, or the speaker far away)."""
FAINT_DB = -30.0
"""Below this a trace is left that barge-in ignores; above it she may hear herself."""


@dataclass(frozen=True)
class SpeakerCheck:
    """How loud her test line came back, relative to how loud she played it."""

    played: bool
    """False when nothing audible went to the speaker (muted, or no speaker)."""
    before_db: float
    """In the raw microphone (0 dB: as loud as she played it)."""
    after_db: float
    """In what she listens to: after echo cancellation (the same as before when it is off)."""
    cancelling: bool
    stuttered: bool = False
    """The sound system dropped or repeated audio during the line (a busy machine): an underrun,
    overflow or device move it reported (EchoStats.xruns; straight on the sound server these are
    the server's own counts, the same that re-align the canceller): the numbers may be off."""

    @property
    def removed_db(self) -> float:
        return self.before_db - self.after_db

    def sentence(self) -> str:
        if self.played and self.stuttered:
            return self._sentence() + (" But the sound stuttered while I tested (the computer may be "
                                       "busy), so these numbers may be off: try again.")
        return self._sentence()

    def _sentence(self) -> str:
        if not self.played:
            return "I couldn't play my test line: check that a speaker is chosen and not muted."
        if self.before_db <= HEARD_NOTHING_DB:
            heard = (f"Hardly any of my voice reaches your microphone ({self.before_db:.0f} dB): "
                     "you don't need echo cancellation")
            return heard + (", but it does no harm." if self.cancelling else ".")
        loud = "a lot of" if self.before_db > -20 else "some of"
        before = f"My voice comes back into your microphone, {loud} it ({self.before_db:.0f} dB)."
        if not self.cancelling:
            return (before + " Echo cancellation is off, so I would hear myself and stop talking: "
                    "switch it on, or use a headset.")
        after = f" After echo cancellation {self.after_db:.0f} dB is left ({self.removed_db:.0f} dB removed):"
        if self.after_db <= HEARD_NOTHING_DB:
            return before + after + " practically nothing. You can talk over me."
        if self.after_db <= FAINT_DB:
            return before + after + " only a faint trace. Talking over me should work."
        return (before + after + " too much. I may interrupt myself: turn the speakers down or "
                "move the microphone away from them.")


def compare(before: EchoStats, after: EchoStats, cancelling: bool) -> SpeakerCheck:
    """The echo between two snapshots of the worker's totals."""
    far = after.far_energy - before.far_energy
    raw = after.raw_energy - before.raw_energy
    clean = after.clean_energy - before.clean_energy
    if after.echo_frames - before.echo_frames < 20 or far <= 0:  # under 0.2 s of her voice
        return SpeakerCheck(False, 0.0, 0.0, cancelling)
    return SpeakerCheck(True, db(raw / far), db(clean / far), cancelling,
                        stuttered=after.xruns > before.xruns)


async def check_speakers(echo: EchoWorker, sink: AudioSink, synthesizer: Synthesizer,
                         line: str = TEST_LINE) -> SpeakerCheck:
    """Play `line` through `sink` and measure its echo on the microphone `echo` cleans.

    The caller keeps her from listening meanwhile (with cancellation off she would hear it).
    """
    audio = await synthesizer.synthesize(line)
    rate = synthesizer.sample_rate
    audio = np.concatenate([audio, np.zeros(int(TAIL_S * rate), dtype=np.float32)])
    start = echo.stats()
    await sink.play(audio, rate)
    # The microphone heard the line while it played; the canceller's thread may not have caught up.
    heard = start.frames + int(audio.size / rate * 100 * CAUGHT_UP)
    end = await asyncio.to_thread(echo.stats_after, heard, CATCH_UP_S)
    return compare(start, end, echo.cancelling)
