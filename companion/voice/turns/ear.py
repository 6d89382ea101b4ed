"""Her ear: source → (frame processors) → VAD → endpointer (and turn model) → transcriber →
"the user said X". It also notices the user talking over her (barge-in). What an ended
utterance said, and whether it is her own voice coming back, is heard by voice.turns.words.
It never talks to the brain or the speaker: the voice loop does.

Seams:
- `processors`: each frame passes through them, in order, before the VAD. An echo canceller
  goes here (it takes the speaker's reference from the sink itself) and returns the cleaned
  frame.
- The endpointer (`voice.turns.endpoint.Endpointer`) and the turn watch (`voice.turns.turn_end`) decide
  where an utterance ends; a semantic end of turn replaces or extends them without touching
  the rest of the ear.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import numpy as np

from companion.voice.hearing.stt import Transcriber
from companion.voice.hearing.vad import SpeechDetector
from companion.voice.sound.audio import AudioSink, AudioSource
from companion.voice.sound.frames import FRAME_S, QUIET_RMS, rms
from companion.voice.turns.barge_in import BargeInWatch
from companion.voice.turns.ear_settings import EarSettings
from companion.voice.turns.endpoint import (
    TURN_CHECK_MS,
    Endpointer,
    PauseStarted,
    SpeechResumed,
    SpeechStarted,
    TurnCheck,
    UtteranceEnded,
)
from companion.voice.turns.held import HELD_S
from companion.voice.turns.latency import TurnLatency
from companion.voice.turns.load import PartialPacer
from companion.voice.turns.smart_turn import SmartTurn
from companion.voice.turns.turn_end import TurnJudge, TurnWatch
from companion.voice.turns.utterance import FrameProcessor, HerVoice, PauseListener, Utterance
from companion.voice.turns.words import Ended, WordsHearer

__all__ = ["Ear", "FrameProcessor", "HerVoice", "PauseListener", "Utterance"]

log = logging.getLogger(__name__)

PARTIAL_EVERY_S = 0.48
"""While the user talks, how often an engine that offers partial transcripts (Moonshine)
transcribes the audio so far: its words then need only checking when the pause begins."""
PREPARE_AFTER_MS = 2 * TURN_CHECK_MS  # a reply is prepared once a pause is this long (shorter gaps waste requests)


class Ear:
    """`run()` reads the source until it ends or is closed; each utterance goes to `heard`,
    each barge-in to `barged_in`."""

    def __init__(
        self, *, source: AudioSource, vad: SpeechDetector, transcriber: Transcriber, her_voice: HerVoice,
        heard: Callable[[Utterance], Awaitable[None]], barged_in: Callable[[], None],
        settings: EarSettings | None = None, sink: AudioSink | None = None, turn_model: SmartTurn | None = None,
        pauses: PauseListener | None = None,
    ) -> None:
        self.source = source
        self.vad = vad
        self.transcriber = transcriber
        self.her_voice = her_voice
        self._barged_in = barged_in
        self.settings = settings or EarSettings()
        self.endpointer = Endpointer(self.settings.endpoint)
        self.pauses = pauses
        """Where pauses are reported (the loop prepares a reply there): the turn-taking seam."""
        self.processors: list[FrameProcessor] = []
        """Run on every frame before the VAD (the echo canceller's place)."""
        self.hearers: list[Callable[[np.ndarray, float], None]] = []
        """Given every frame she hears, cleaned, with the stream time it ends at (the wake-word
        detector's door: it must only queue)."""
        self.speech_start_s = 0.0
        """Stream seconds where the utterance under way (or the latest) began."""
        self.turn_watch = TurnWatch(TurnJudge(turn_model, self.settings.turn_rule)) if turn_model is not None else None
        """Asks the turn model at each pause; None: the silence alone ends a turn."""
        self._early: dict[int, asyncio.Task[str]] = {}
        self._partial: asyncio.Task[str | None] | None = None
        self._partial_at_s = 0.0
        self.partial_pacer = PartialPacer(PARTIAL_EVERY_S)
        """Holds partial transcripts back under load (companion.voice.turns.load says in which order work goes)."""
        self.partials: list[str] = []
        """The partial transcripts of the utterance under way (never heard as what was said)."""
        self.early_words: Callable[[float, float], bool] = lambda _start, _end: True
        """words.words_wanted's question without waiting (for the early transcript at a pause)."""
        self.hearing_words = False  # an ended utterance is being transcribed and judged (background work waits)
        self._quiet = False
        """The latest frame was digital silence (below QUIET_RMS)."""
        self._over_her = False
        """The utterance under way sounded (speech, not its trailing silence) while she spoke."""
        self.barge_in = BargeInWatch(sink)
        """Whether the user talks over her; the utterance around its latest firing stopped her,
        and only that makes a turn while she still speaks."""
        self.pause_speech_end_s = 0.0
        """Stream time the latest pause began (where its early transcript ends)."""
        self._last_frame = (0.0, time.monotonic())
        """(endpointer stream seconds, time.monotonic()) at the end of the newest frame heard."""
        self._closing = False
        self._spoke_from = 0.0
        self._hearing: asyncio.Future | None = None
        """Hearing the words of the utterances that ended, one after another (a live source)."""
        self._let_go_at: float | None = None
        """Stream time at which a sound held after the latest utterance can no longer be taken
        by the next (none started within HELD_S of its end): words.let_go is asked then."""
        self._origin: float | None = None
        """time.monotonic() of the endpointer's stream time 0: frames are captured in real time,
        but read late when the ear falls behind, so their capture time comes from here."""
        self.words = WordsHearer(transcriber=transcriber, her_voice=her_voice, heard=heard, discard=self._discard,
                                 captured_at=self._captured_at, realtime=lambda: self.source.realtime,
                                 max_utterance_s=self.settings.endpoint.max_utterance_s)
        """Hears what each ended utterance said (its `words_wanted` asks whether to)."""

    @property
    def in_speech(self) -> bool:
        return self.endpointer.in_speech

    def apply(self, settings: EarSettings) -> None:
        """New settings take effect now; a new end-of-turn silence applies from the next utterance."""
        if settings.endpoint != self.settings.endpoint:
            self.endpointer = Endpointer(settings.endpoint)
            self.barge_in.forget()
            self._origin = None
            self._let_go_at = None
            self.words.new_clock(settings.endpoint.max_utterance_s)
        if self.turn_watch is not None:
            self.turn_watch.judge.rule = settings.turn_rule
        self.settings = settings

    async def run(self, after_frame: Callable[[], None] = lambda: None) -> None:
        """Until the source ends. Run again after a failure, it starts on a fresh utterance."""
        self.endpointer = Endpointer(self.settings.endpoint)
        self._origin = None
        self.words.going_on.forget()
        self.words.held.forget()
        self._let_go_at = None
        self.barge_in.forget()
        for task in self._early.values():
            task.cancel()
        self._early.clear()
        while (frame := await self.source.read()) is not None:
            self._words_failed()
            if self._origin is None:
                self._origin = time.monotonic() - FRAME_S - self.endpointer.stream_s
            if self.settings.muted:
                # Muted frames never reach the endpointer, so its clock stops: the origin moves
                # on with the real one, or her echo would be looked for at the wrong time after.
                self._origin += FRAME_S
                continue
            self._last_frame = (self.endpointer.stream_s + FRAME_S, time.monotonic())
            for processor in self.processors:
                frame = processor.process(frame)
            for hearer in self.hearers:
                hearer(frame, self.endpointer.stream_s + FRAME_S)  # the clock utterances are timed on
            await self._hear(frame)
            after_frame()
        if not self._closing:
            # The audio ran out (a file): whoever was speaking has stopped.
            for event in self.endpointer.flush():
                await self._utterance_ended(event)
            await self._in_order(lambda: self.words.let_go(float("inf")))  # nothing follows now
        if self._hearing is not None and not self._closing:
            await asyncio.gather(self._hearing, return_exceptions=True)
            self._words_failed()

    async def _hear(self, frame: np.ndarray) -> None:
        quiet = rms(frame) < QUIET_RMS
        if quiet and not self._quiet and not self.endpointer.in_speech:
            # Digital silence between utterances (a gap between recordings, a source that paused):
            # the detector's memory of the speech before it is stale. Kept, it stayed deaf (p <=
            # 0.31) for 5 s to Michael's quieter second recording after 0.3 s of zeros; afresh it
            # hears him from his second word, as it would after a second of quiet (vad.SkipQuiet).
            self.vad.reset()
        self._quiet = quiet
        probability = self.vad.probability(frame)
        voice = self.her_voice
        if voice.busy and not self.settings.barge_in:
            # Without barge-in her own voice must not become a question: hear nothing while she talks.
            return
        if voice.busy:
            # Between two of her sentences too: on a busy machine the next one may still be
            # synthesizing, and a "Stop" said in that gap is as much talking over her.
            self._watch_for_barge_in(frame, probability)
        else:
            self.barge_in.she_is_quiet()
        if voice.busy and self.endpointer.in_speech and probability >= self.settings.endpoint.start_threshold:
            self._over_her = True
        watch = self.turn_watch
        if watch is not None:
            for pause_id in watch.finished():
                for event in self.endpointer.conclude(pause_id):
                    await self._utterance_ended(event)
        for event in self.endpointer.push(frame, probability):
            if isinstance(event, SpeechStarted):
                if self._let_go_at is not None and event.at_s < self._let_go_at:
                    self._let_go_at = None  # it may take what was held: judged when it ends
                self._over_her = voice.busy
                self._spoke_from = self._captured_at(event.at_s)
                self.partials, self._partial_at_s = [], self.endpointer.stream_s
                self.speech_start_s = event.at_s
            elif isinstance(event, PauseStarted):
                if self.words.words_wanted is not None and not self.early_words(self.speech_start_s, event.speech_end_s):
                    continue  # nobody called her: no early transcript either
                early = asyncio.create_task(self.transcriber.transcribe(event.audio))
                self._early[event.pause_id] = early
                self.pause_speech_end_s = event.speech_end_s
                early.add_done_callback(lambda _task, pause_id=event.pause_id: self._pause_ready(pause_id))
                early.add_done_callback(self._words_so_far)
            elif isinstance(event, TurnCheck) and watch is not None:
                watch.check(event, self._early.get(event.pause_id))
                if not self.source.realtime:
                    # A file has no real time to keep up with: wait for the answer right here.
                    finished = await watch.answer(event.pause_id)
                    self._pause_ready(event.pause_id)
                    for ended in self.endpointer.conclude(event.pause_id) if finished else ():
                        await self._utterance_ended(ended)
            elif isinstance(event, SpeechResumed):
                task = self._early.pop(event.pause_id, None)
                if task:
                    task.cancel()
                if self.pauses is not None:
                    self.pauses.resumed(event.pause_id)
                if watch is not None:
                    watch.resumed(event.pause_id)
            elif isinstance(event, UtteranceEnded):
                await self._utterance_ended(event)
        if self.endpointer.pause_id is not None:
            self._pause_ready(self.endpointer.pause_id)
        if self._let_go_at is not None and self.endpointer.stream_s >= self._let_go_at:
            until, self._let_go_at = self._let_go_at, None
            await self._in_order(lambda: self.words.let_go(until))
        self._transcribe_so_far()

    def _transcribe_so_far(self) -> None:
        """While the user talks, a partial transcript every PARTIAL_EVERY_S, by an engine that
        offers them: the first work dropped under load. Never queued: the next waits for the
        last to finish, and longer when it took long; none while the ear is behind; and the
        transcript the pause asks for stops one under way."""
        pacer = self.partial_pacer
        pacer.frame_heard(self._last_frame[0], self._origin)  # a new run or endpointer: a new timeline
        partial = getattr(self.transcriber, "partial", None)
        if partial is None or not self.source.realtime or self.endpointer.pause_id is not None:
            return
        if self._partial is not None and not self._partial.done():
            return
        if not pacer.may_start(self.endpointer.stream_s - self._partial_at_s):
            return
        audio = self.endpointer.audio_so_far()
        if audio is None:
            return
        self._partial_at_s = self.endpointer.stream_s
        pacer.partial_started()
        self._partial = asyncio.create_task(partial(audio))
        self._partial.add_done_callback(self._partial_done)

    def _partial_done(self, task: asyncio.Task[str | None]) -> None:
        self.partial_pacer.partial_done()
        if task.cancelled() or task.exception() is not None:
            if not task.cancelled():
                log.debug("a partial transcript failed: %s", task.exception())
            return
        if task.result() and self.endpointer.in_speech:
            self.partials.append(task.result())
            self._tell_words(task.result())

    def _words_so_far(self, task: asyncio.Task[str]) -> None:
        """A pause's early transcript, ready while the user may still be talking."""
        if not task.cancelled() and task.exception() is None and task.result():
            self._tell_words(task.result())

    def _tell_words(self, text: str) -> None:
        """The words so far go to the listener (a prompt fill) while the utterance is open."""
        heard = getattr(self.pauses, "words_so_far", None)
        if heard is not None and self.endpointer.in_speech and not self.settings.muted and not self._closing:
            heard(text)

    def _pause_ready(self, pause_id: int) -> None:
        """Tell the listener once the pause under way is long enough to be more than a gap
        between words and its early transcript is ready."""
        early = self._early.get(pause_id)
        if self.pauses is None or early is None or not early.done() or early.cancelled():
            return
        if early.exception() is not None or not early.result() or self.settings.muted or self._closing:
            return
        if self.endpointer.pause_id != pause_id or self.endpointer.silence_ms < PREPARE_AFTER_MS:
            return
        if self.words.is_her_echo(early.result(), self.pause_speech_end_s, self._spoke_from):
            return  # her own voice coming back: nothing to prepare a reply to
        self.pauses.pause_ready(pause_id, early.result())

    def _watch_for_barge_in(self, frame: np.ndarray, probability: float) -> None:
        s = self.settings
        floor = self.barge_in.floor(s.barge_in_floor, s.echo_ratio)
        speech = probability >= s.endpoint.start_threshold
        stream_s = self.endpointer.stream_s
        if self.barge_in.hear(frame, speech, floor, s.barge_in_ms, stream_s, self._captured_at(stream_s)):
            log.debug("barge-in: mic %.3f, floor %.3f", rms(frame), floor)
            self._barged_in()

    async def _utterance_ended(self, event: UtteranceEnded) -> None:
        """What can be judged now is judged now; the words are then heard after those of the
        utterance before, while the ear goes on reading frames (a live source): waiting for a
        transcript here held up the VAD, barge-in and the next utterance's timing."""
        heard = self._judge_ended(event)
        self._let_go_at = event.speech_end_s + HELD_S + FRAME_S
        await self._in_order(lambda: self.words.hear(heard))

    async def _in_order(self, work: Callable[[], Awaitable[None]]) -> None:
        """Hear words after those of the utterances before: right here from a file (it has no
        real time to keep up with), else in the background, chained."""
        self.hearing_words = True
        if not self.source.realtime:
            try:
                await work()
            finally:
                self.hearing_words = False
            return
        self._hearing = asyncio.ensure_future(self._after(self._hearing, work))

    async def _after(self, before: asyncio.Future | None, work: Callable[[], Awaitable[None]]) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)  # its failure is raised from run()
        try:
            await work()
        finally:
            if asyncio.current_task() is self._hearing:  # the last one chained: nothing left to hear
                self.hearing_words = False

    def _words_failed(self) -> None:
        """A failure while hearing the words of an ended utterance ends run(), as it did inline."""
        task = self._hearing
        if task is not None and task.done():
            self._hearing = None
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()

    def _judge_ended(self, event: UtteranceEnded) -> Ended:
        """Everything about an ended utterance that the next frames would change: its latency
        marks, its early transcript, whether it stopped her, whether it sounded only under her."""
        latency = TurnLatency()
        stream_now, wall_now = self._last_frame
        latency.mark("speech_end", wall_now - (stream_now - event.speech_end_s))
        latency.mark("utterance_end")
        if self.turn_watch is not None:
            latency.verdicts = self.turn_watch.take_verdicts(event.pause_id)
        early = self._early.pop(event.pause_id, None) if event.pause_id is not None else None
        for task in self._early.values():
            task.cancel()
        self._early.clear()
        stopped_her = self.barge_in.stopped_her(self.speech_start_s, event.speech_end_s)
        # Sounded over her and ended while she speaks, never as loud as someone talking over her:
        # by itself no turn (words.WordsHearer hears it only when its words are clearly a
        # person's), or the canceller's leftover of her words (heard as "algebra." for
        # "Australia", or "Alright.", mostly while it still learns the room at her first reply)
        # started a turn of its own and cut her off, bypassing the level that keeps her echo from
        # stopping her. It is held, not dropped: a person who began under her voice (Michael's
        # "Uh, so this is the sick corpus", 5 dB quieter) is heard with what he says next. Words
        # said before she began, whose trailing silence she starts speaking in, are still a turn.
        under_her = self._over_her and not stopped_her and self.her_voice.busy
        # Speech over her goes on with the utterance before only if it stopped her: her own
        # echo right after a question is no part of it.
        may_go_on = stopped_her or not self._over_her
        return Ended(event, latency, early, stopped_her, self.speech_start_s, self._spoke_from, may_go_on,
                     under_her=under_her)

    def drop_utterance(self) -> None:
        """Forget the utterance under way: its audio was cut off (the sound server went away),
        so what was heard of it is no question to answer."""
        pause_id = self.endpointer.pause_id
        self.endpointer.drop()
        for task in self._early.values():
            task.cancel()
        self._early.clear()
        if self._partial is not None:
            self._partial.cancel()
        self.partials = []
        self._discard(pause_id)

    def _discard(self, pause_id: int | None) -> None:
        if self.pauses is not None:
            self.pauses.discarded(pause_id)

    def _captured_at(self, stream_s: float) -> float:
        """When (time.monotonic()) the audio at the endpointer's `stream_s` was captured."""
        return (self._origin if self._origin is not None else time.monotonic()) + stream_s

    def close(self) -> None:
        self._closing = True
        self.source.close()
        if self._hearing is not None:
            self._hearing.cancel()
        if self._partial is not None:
            self._partial.cancel()
        for task in self._early.values():
            task.cancel()
        if self.turn_watch is not None:
            self.turn_watch.close()
