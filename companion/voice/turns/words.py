"""What an ended utterance said, and whether it is anything to answer: the ear's second job.

The ear (voice.turns.ear) reads frames, finds where utterances end and judges at once what the
next frames would change (whether it stopped her, its early transcript). The rest runs here,
after the utterance ended, while the ear goes on reading: it joins the utterance to the one
before when the user went on with it, puts a sound held back just before it in front
(voice.turns.held), skips it when nobody called her and only the wake word could (Whisper then
never runs on it), transcribes it, drops her own voice coming back as echo, and hands the words on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

from companion.voice.hearing.stt import Transcriber
from companion.voice.speaking.echo import (
    ECHO_LAG_S,
    MIN_ECHO_WORDS,
    OPENING_ECHO_WORDS,
    PlayedLine,
    is_echo,
    words,
)
from companion.voice.turns.barge_in import only_backchannel
from companion.voice.turns.endpoint import UtteranceEnded
from companion.voice.turns.going_on import GoingOn
from companion.voice.turns.held import Held, HeldSound
from companion.voice.turns.latency import TurnLatency
from companion.voice.turns.utterance import HerVoice, Utterance

__all__ = ["Ended", "WordsHearer"]

log = logging.getLogger(__name__)

PERSON_WORDS = MIN_ECHO_WORDS
"""Words heard only over her, below the barge-in level, that are this many or more and mostly
not hers are a person's, heard at once (her echo's leftovers are a word or two)."""


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
    under_her: bool = False
    """It sounded only over her, below the barge-in level, and ended while she spoke: never a
    turn by itself unless its words are clearly a person's; otherwise held for what follows."""


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
        self.held = Held(max_utterance_s=max_utterance_s)
        """The latest sound not handed on (under her voice, or no words alone): speech right
        after it is heard with it in front."""
        self.words_wanted: Callable[[float, float], Awaitable[bool]] | None = None
        """Asked (start, end in stream seconds) before an utterance is transcribed: False when
        nobody called her and only the wake word could (Whisper then never runs on it)."""
        self.skipped = 0
        """Utterances not transcribed because words_wanted said no."""

    def new_clock(self, max_utterance_s: float) -> None:
        """The ear's stream clock starts again (new endpointer settings): nothing goes on across it."""
        self.going_on = GoingOn(max_utterance_s=max_utterance_s)
        self.held.forget()
        self.held = Held(max_utterance_s=max_utterance_s)

    async def hear(self, ended: Ended) -> None:
        event, latency, early, stopped_her = ended.event, ended.latency, ended.early, ended.stopped_her
        start_s, spoke_from = ended.start_s, ended.spoke_from
        if ended.under_her:
            await self._under_her(ended)
            return
        audio = event.audio
        held = self.held.take(audio, start_s, lambda sound: self._she_was_quiet(sound.spoke_from, start_s))
        if held is not None and await self._in_front(held):
            audio, start_s, spoke_from = np.concatenate([held.audio, audio]), held.start_s, held.spoke_from
            if early is not None:
                early.cancel()  # of this part alone: the whole is heard instead
                early = None
        # Only live: a file is heard turn by turn, each reply said whole first. With a held sound
        # in front, never: that sound may be her first word after the question (heard as nothing
        # alone), and going on from it joined her echo to the question ("… Canberra. Okay.").
        may_go_on = ended.may_go_on and held is None
        goes_on = self.going_on.joined(audio, start_s) if may_go_on and self._realtime() else None
        if goes_on is not None and stopped_her:
            # What stopped her may be her own first words come back (an echo canceller starved of
            # time lets a line's onset through): heard alone first, or her echo would be taken
            # for the user going on with the question she is answering, and stop her reply. Even
            # one word is hers here when it opens her line as that line began, or when half its
            # words are in what she was saying ("once of" for "Once upon a time", beside busy
            # cores): a user going on with her own words as she says them is far rarer than her echo.
            alone = await early if early is not None else await self.transcriber.transcribe(audio)
            early = None
            if alone and self._hers(alone, event.speech_end_s, spoke_from):
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
        if not text and goes_on is None and may_go_on and not self._realtime():
            # From a file too, a word Whisper hears nothing in alone goes on with the turn it
            # follows closely ("And that should be all. | Thanks.", 0.13 s later): heard with it,
            # it is heard, and the whole is the next turn, as live.
            goes_on = self.going_on.joined(audio, start_s)
            whole = await self.transcriber.transcribe(goes_on[0]) if goes_on is not None else ""
            if len(words(whole)) > len(words(self.going_on.text)):
                (audio, start_s), text = goes_on, whole
            else:
                goes_on = None
        if not text:
            # Whisper hears nothing in a short word alone ("too cruel"): heard with what follows
            # closely, it is heard.
            log.info("held a sound heard as no words, for what follows within %.1f s (%.1f s if I say nothing)",
                     self.held.within_s, self.held.quiet_within_s)
            self.held.hold(HeldSound(audio, start_s, event.speech_end_s, spoke_from, None, over_her=False))
            self._discard(event.pause_id)
            return
        if stopped_her and self._opens_her_line(text, spoke_from):
            log.info("dropped my own echo, the start of my line: %r", text)
            self._discard(event.pause_id)
            return
        if self.is_her_echo(text, event.speech_end_s, spoke_from):
            log.info("dropped my own echo: %r", text)
            self._discard(event.pause_id)
            return
        latency.heard = text
        self.going_on.remember(audio, start_s, event.speech_end_s, text)
        if goes_on is not None:
            log.info("the user went on after the turn ended: heard as one, %r", text)
        await self._heard(Utterance(text, latency, event.pause_id, start_s, event.speech_end_s, stopped_her,
                                    goes_on=goes_on is not None))

    async def _under_her(self, ended: Ended) -> None:
        """A sound only over her, below the barge-in level, ended while she speaks: a person's
        words when its early transcript clearly is (PERSON_WORDS or more, most of them not in
        her lines), heard now; otherwise held, never a turn or a stop by itself."""
        event, early = ended.event, ended.early
        text = await early if early is not None else ""
        if text and self._hers(text, event.speech_end_s, ended.spoke_from):
            log.info("dropped my own echo, heard only while I spoke: %r", text)
            self._discard(event.pause_id)
            return
        wanted = self.words_wanted is None or await self.words_wanted(ended.start_s, event.speech_end_s)
        if text and wanted and self._clearly_a_person(text, event.speech_end_s, ended.spoke_from):
            log.info("a person began while I spoke, below the barge-in level: %r", text)
            ended.latency.mark("transcribed")
            ended.latency.heard = text
            self.going_on.remember(event.audio, ended.start_s, event.speech_end_s, text)
            await self._heard(Utterance(text, ended.latency, event.pause_id, ended.start_s, event.speech_end_s))
            return
        log.info("held a sound heard only while I spoke, below the barge-in level: %r", text)
        self.held.hold(HeldSound(event.audio, ended.start_s, event.speech_end_s, ended.spoke_from,
                                 early if early is not None else None, over_her=True))
        self._discard(event.pause_id)

    async def let_go(self, until_s: float) -> None:
        """Stream time `until_s` is past the window of the sound held from under her voice, and
        nothing followed it. Words of a person who went on with what she is answering (it began
        within GOES_ON_S of that utterance's end: "Montreal forced, um, | aligner") are heard
        with it, as going on after a turn end is; a listening noise ("Mm-hmm.") goes to her
        transcript as an aside; any other is let go, as before."""
        held = self.held.expired(until_s)
        if held is None or not held.over_her:
            return  # a sound Whisper heard nothing in, no voice of hers there: nothing to hear
        known = held.text is not None and held.text.done() and not held.text.cancelled()
        text = held.text.result() if known else await self.transcriber.transcribe(held.audio)
        if not text or self._hers(text, held.end_s, held.spoke_from):
            log.info("let go of a sound held from under my voice, nothing followed: %r", text)
            return
        if only_backchannel(text):  # an "mm-hm" as she begins is no part of the question either
            await self._heard(Utterance(text, TurnLatency(), None, held.start_s, held.end_s, aside=True))
            return
        goes_on = self.going_on.joined(held.audio, held.start_s)
        if goes_on is None:
            log.info("let go of words held from under my voice, nothing followed: %r", text)
            return
        audio, start_s = goes_on
        whole = await self.transcriber.transcribe(audio)
        if len(words(whole)) <= len(words(self.going_on.text)):
            log.info("let go of a sound held from under my voice, no words with the turn before: %r", text)
            return
        latency = TurnLatency()
        latency.mark("speech_end", self._captured_at(held.end_s))
        latency.mark("utterance_end")
        latency.mark("transcribed")
        latency.heard = whole
        self.going_on.remember(audio, start_s, held.end_s, whole)
        log.info("the user went on under my voice with the turn before, nothing followed: %r", whole)
        await self._heard(Utterance(whole, latency, None, start_s, held.end_s, goes_on=True))

    async def _in_front(self, held: HeldSound) -> bool:
        """Whether a held sound goes in front of the utterance after it: never her own words."""
        if not held.over_her:
            return True  # Whisper heard nothing in it alone, and no voice of hers was there
        known = held.text is not None and held.text.done() and not held.text.cancelled()
        text = held.text.result() if known else await self.transcriber.transcribe(held.audio)
        if text and self._hers(text, held.end_s, held.spoke_from):
            log.info("her own words held from under her voice are not put in front: %r", text)
            return False
        log.info("heard with what was held from under her voice: %r", text)
        return True

    def _her_lines_near(self, speech_end_s: float, spoke_from: float) -> list[PlayedLine]:
        """Her lines that played from `spoke_from` (time.monotonic()) to the capture time of
        `speech_end_s`, give or take the room's lag."""
        spoken_to = self._captured_at(speech_end_s)
        spoken_from = min(spoke_from or spoken_to, spoken_to)
        now = time.monotonic()
        return [line for line in self.her_voice.recent_played
                if line.started <= spoken_to + ECHO_LAG_S
                and (line.ended if line.ended is not None else now) + ECHO_LAG_S >= spoken_from]

    def _her_words_near(self, speech_end_s: float, spoke_from: float) -> set[str]:
        """Every word of her lines that played from `spoke_from` to `speech_end_s` (as above)."""
        return {word for line in self._her_lines_near(speech_end_s, spoke_from) for word in words(line.text)}

    def _she_was_quiet(self, spoke_from: float, until_s: float) -> bool:
        """No line of hers played from `spoke_from` to stream time `until_s`, and none plays now:
        no echo of hers can be there."""
        return not self.her_voice.busy and not self._her_lines_near(until_s, spoke_from)

    def _hers(self, text: str, speech_end_s: float, spoke_from: float) -> bool:
        """`text`, heard under her voice, is hers: her echo (even one opening word), or half its
        words or more are in what she was saying then (her onsets one by one, "It was … I will";
        her line misheard, "It was a lovely day in Austin." for "… in Australia")."""
        said = words(text)
        hers = self._her_words_near(speech_end_s, spoke_from)
        return self.is_her_echo(text, speech_end_s, spoke_from, opening_words=1) or (
            bool(said) and 2 * sum(word in hers for word in said) >= len(said))

    def _opens_her_line(self, text: str, spoke_from: float) -> bool:
        """A few words that began as one of her lines began, opening with that line's first word:
        its onset come back through a canceller starved of time, the rest misheard ("once of" for
        "Once upon a time", her first line after a slow brain, beside two busy loops). A user who
        stops her with her own first word as she says it is far rarer."""
        said = words(text)
        return 0 < len(said) < MIN_ECHO_WORDS and any(
            words(line.text)[:1] == said[:1] and abs(spoke_from - line.started) <= ECHO_LAG_S
            for line in self.her_voice.recent_played)

    def _clearly_a_person(self, text: str, speech_end_s: float, spoke_from: float) -> bool:
        """PERSON_WORDS or more, most of them not in what she was saying then: her echo's
        leftovers are a word or two of her line ("Alright.", "It was", "algebra.")."""
        return len(words(text)) >= PERSON_WORDS and not self._hers(text, speech_end_s, spoke_from)

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
