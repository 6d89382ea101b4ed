"""What an ended utterance said, and whether it is anything to answer: the ear's second job.

The ear (voice.turns.ear) reads frames, finds where utterances end and judges at once what the
next frames would change (whether it stopped her, its early transcript). The rest runs here,
after the utterance ended, while the ear goes on reading: it joins the utterance to the one
before when the user went on with it, skips it when nobody called her and only the wake word
could (Whisper then never runs on it), transcribes it, drops her own voice coming back as echo,
and hands the words on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from companion.voice.hearing.stt import Transcriber
from companion.voice.speaking.echo import OPENING_ECHO_WORDS, is_echo
from companion.voice.turns.endpoint import UtteranceEnded
from companion.voice.turns.going_on import GoingOn
from companion.voice.turns.latency import TurnLatency
from companion.voice.turns.utterance import HerVoice, Utterance

__all__ = ["Ended", "WordsHearer"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ended:
    """What the ear knew of an utterance the moment it ended (its next frames change it)."""

    event: UtteranceEnded
    latency: TurnLatency
    early: asyncio.Task[str] | None
    """Its early transcript, taken when the pause began (None: none was taken)."""
    stopped_her: bool
    start_s: float
    spoke_from: float
    """time.monotonic() when it began (where her echo in it is looked for)."""
    may_go_on: bool
    """It may go on with the utterance before (it did not sound only over her)."""


class WordsHearer:
    """`heard` gets each utterance worth answering; `discard(pause_id)` is told of the others;
    `captured_at(stream_s)` is when the audio at that stream time was captured (time.monotonic());
    `realtime()` is True for a live source."""

    def __init__(self, *, transcriber: Transcriber, her_voice: HerVoice, heard: Callable[[Utterance], Awaitable[None]],
                 discard: Callable[[int | None], None], captured_at: Callable[[float], float], realtime: Callable[[], bool],
                 max_utterance_s: float) -> None:
        self.transcriber = transcriber
        self.her_voice = her_voice
        self._heard = heard
        self._discard = discard
        self._captured_at = captured_at
        self._realtime = realtime
        self.going_on = GoingOn(max_utterance_s=max_utterance_s)
        """The latest utterance handed on as words: speech right after it goes on with it."""
        self.words_wanted: Callable[[float, float], Awaitable[bool]] | None = None
        """Asked (start, end in stream seconds) before an utterance is transcribed: False when
        nobody called her and only the wake word could (Whisper then never runs on it)."""
        self.skipped = 0
        """Utterances not transcribed because words_wanted said no."""

    def new_clock(self, max_utterance_s: float) -> None:
        """The ear's stream clock starts again (new endpointer settings): nothing goes on across it."""
        self.going_on = GoingOn(max_utterance_s=max_utterance_s)

    async def hear(self, ended: Ended) -> None:
        event, latency, early, stopped_her = ended.event, ended.latency, ended.early, ended.stopped_her
        start_s, spoke_from = ended.start_s, ended.spoke_from
        # Only live: a file is heard turn by turn, each reply said whole first.
        goes_on = self.going_on.joined(event.audio, start_s) if ended.may_go_on and self._realtime() else None
        audio = event.audio
        if goes_on is not None and stopped_her:
            # What stopped her may be her own first words come back (an echo canceller starved of
            # time lets a line's onset through): heard alone first, or her echo would be taken
            # for the user going on with the question she is answering, and stop her reply. Even
            # one word is hers here when it opens her line as that line began: a user going on
            # with her very first word as she says it is far rarer than her echo.
            alone = await early if early is not None else await self.transcriber.transcribe(audio)
            early = None
            if alone and self.is_her_echo(alone, event.speech_end_s, spoke_from, opening_words=1):
                log.info("dropped my own echo right after the question: %r", alone)
                self._discard(event.pause_id)
                return
        if goes_on is not None:
            audio, start_s = goes_on
            if early is not None:
                early.cancel()  # of the second half alone: the whole is heard instead
                early = None
        if self.words_wanted is not None and not await self.words_wanted(start_s, event.speech_end_s):
            if early is not None:
                early.cancel()
            self.skipped += 1
            self._discard(event.pause_id)
            return
        if early is not None:
            latency.early_transcript_ready = early.done()
            text = await early
        else:
            text = await self.transcriber.transcribe(audio)
        latency.mark("transcribed")
        if not text:
            self._discard(event.pause_id)
            return
        if self.is_her_echo(text, event.speech_end_s, spoke_from):
            log.info("dropped my own echo: %r", text)
            self._discard(event.pause_id)
            return
        latency.heard = text
        self.going_on.remember(audio, start_s, event.speech_end_s)
        if goes_on is not None:
            log.info("the user went on after the turn ended: heard as one, %r", text)
        await self._heard(Utterance(text, latency, event.pause_id, start_s, event.speech_end_s, stopped_her,
                                    goes_on=goes_on is not None))

    def is_her_echo(self, text: str, speech_end_s: float, spoke_from: float, *,
                    opening_words: int = OPENING_ECHO_WORDS) -> bool:
        """True when `text`, heard up to stream time `speech_end_s` from `spoke_from`
        (time.monotonic() when that utterance began), is her own line coming back."""
        spoken_to = self._captured_at(speech_end_s)
        spoken_from = min(spoke_from or spoken_to, spoken_to)
        log.debug("echo check %r from %.2f to %.2f now %.2f: %s", text, spoken_from, spoken_to, time.monotonic(),
                  [(p.text, round(p.started, 2), p.ended and round(p.ended, 2)) for p in self.her_voice.recent_played])
        return is_echo(text, self.her_voice.recent_played, spoken_from=spoken_from, spoken_to=spoken_to,
                       now=time.monotonic(), opening_words=opening_words)
