"""The voice loop: listening → thinking → speaking, with early transcription and barge-in.

Frames come from an AudioSource; the VAD and endpointer find utterances; Whisper turns them
into text; the brain's events (streamed reply text, narration lines) go to the Speaker.
One cancel (barge-in) ends playback, queued speech and the brain turn together.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from companion.config import VoiceSettings
from companion.events import (
    Event,
    EventBus,
    ReplyDelta,
    ReplyDone,
    Speak,
    SpeechKind,
    State,
    StateChanged,
    TurnFinished,
)
from companion.voice.audio import AudioSink, AudioSource
from companion.voice.echo import is_echo
from companion.voice.endpoint import (
    TURN_CHECK_MS,
    Endpointer,
    EndpointSettings,
    PauseStarted,
    SpeechResumed,
    TurnCheck,
    UtteranceEnded,
)
from companion.voice.latency import TurnLatency
from companion.voice.preparing import Preparation, ReplyPreparer
from companion.voice.sentences import SentenceSplitter
from companion.voice.smart_turn import SmartTurn
from companion.voice.speaker import Line, Speaker
from companion.voice.stt import Transcriber
from companion.voice.turn_end import TurnJudge, TurnWatch
from companion.voice.vad import FRAME_S, SAMPLE_RATE, SpeechDetector, rms

log = logging.getLogger(__name__)

PREPARE_AFTER_MS = TURN_CHECK_MS
"""A reply is prepared once a pause is this long: shorter gaps between words would waste requests."""


class BrainPort(Protocol):
    """What the voice loop needs from the brain (companion.voice.brain_port adapts the runtime)."""

    async def ask(self, text: str) -> None:
        """Run one voice turn; its reply arrives as events on the bus."""

    def cancel_turn(self) -> None: ...

    def keep_only_spoken(self, spoken: str) -> None:
        """After a barge-in: the history's last reply becomes just what she actually said."""

    def hold_notices(self, hold: bool) -> None:
        """Background results wait while the user speaks or she talks."""

    # Optional (companion.voice.brain_port.CompanionBrain has them): a reply prepared during
    # the pause. prepare(text, front) -> PreparedTurn; ask_prepared(prepared) runs it as the turn.


@dataclass(frozen=True)
class LoopSettings:
    barge_in: bool = True
    """Stop her when the user talks over her (on open speakers too: her echo is cancelled)."""
    barge_in_ms: int = 250
    """How long the user must speak over her before she stops."""
    barge_in_floor: float = 0.01
    """Minimum microphone level (RMS) that can count as the user talking over her."""
    echo_ratio: float = 0.3
    """The floor also rises to this fraction of her own current playback level: what echo
    cancellation leaves of her voice while it learns the room, or when a busy machine makes the
    speaker stutter, stays below it (and without cancellation, her echo on a headset does)."""
    muted: bool = False
    """Microphone muted: frames are read and thrown away."""
    endpoint: EndpointSettings = field(default_factory=EndpointSettings)

    @classmethod
    def from_voice(cls, voice: VoiceSettings, *, turn_model: bool = False) -> LoopSettings:
        return cls(barge_in=voice.barge_in, muted=voice.muted,
                   endpoint=EndpointSettings.for_patience(voice.end_of_turn_silence_ms, turn_model=turn_model))


def _frames_in(ms: float) -> int:
    return max(1, round(ms / 1000 / FRAME_S))


class VoiceLoop:
    """Runs until the source ends or close() is called. `latencies` keeps every turn's stages."""

    def __init__(
        self, *, source: AudioSource, speaker: Speaker, vad: SpeechDetector, transcriber: Transcriber,
        brain: BrainPort, bus: EventBus, settings: LoopSettings | None = None, sink: AudioSink | None = None,
        turn_model: SmartTurn | None = None,
    ) -> None:
        self.source = source
        self.speaker = speaker
        self.vad = vad
        self.transcriber = transcriber
        self.brain = brain
        self.bus = bus
        self.settings = settings or LoopSettings()
        self.endpointer = Endpointer(self.settings.endpoint)
        self.turn_watch = TurnWatch(TurnJudge(turn_model)) if turn_model is not None else None
        """Asks the turn model at each pause; None: the silence alone ends a turn."""
        self.preparer = ReplyPreparer(brain, speaker)
        """The reply prepared during the current pause, if any."""
        self.latencies: list[TurnLatency] = []
        self.heard: list[str] = []
        self.barge_ins = 0
        self._splitter = SentenceSplitter()
        self._early: dict[int, asyncio.Task[str]] = {}
        self._turn: asyncio.Task | None = None
        self._trim: asyncio.Task | None = None
        self._holding = False
        self.on_busy: list = []
        """Callables told True while the user speaks or a turn runs, False when quiet again."""
        self.intercept: Callable[[str], bool] | None = None
        """Sees each heard utterance first; True means it was an answer to something else (the
        window's approval card hearing "yes"), so it starts no turn and interrupts nothing."""
        self._latency: TurnLatency | None = None
        self._discarding = False
        self._over_floor: deque[bool] = deque(maxlen=_frames_in(400))  # the last 400 ms of frames
        self._out_levels: deque[float] = deque(maxlen=15)  # ~300 ms of 20 ms blocks
        self._last_frame = (0.0, time.monotonic())  # (stream seconds, monotonic) of the newest frame
        self._state: State | None = None
        """The last state anyone announced on the bus (the brain says thinking and working)."""
        self._running = False
        self._closing = False
        self._unsubscribe = bus.subscribe(self._on_event)
        speaker.on_synthesized = self._on_synthesized
        speaker.on_playing = self._on_playing
        speaker.on_idle = self._on_idle
        if sink is not None:
            sink.add_level_listener(self._out_levels.append)
            sink.add_start_listener(self._on_first_sample)

    # --- settings -----------------------------------------------------------------------
    def apply(self, settings: LoopSettings) -> None:
        """New settings take effect now; a new end-of-turn silence applies from the next utterance."""
        if settings.endpoint != self.settings.endpoint:
            self.endpointer = Endpointer(settings.endpoint)
        self.settings = settings
        self._settle_state()

    # --- running ------------------------------------------------------------------------
    async def run(self) -> None:
        self._running = True
        self._settle_state()
        try:
            while (frame := await self.source.read()) is not None:
                stream_s = self._last_frame[0] + FRAME_S
                self._last_frame = (stream_s, time.monotonic())
                if self.settings.muted:
                    continue
                await self._hear(frame)
                self._update_hold()
            if not self._closing:
                # The audio ran out (a file): whoever was speaking has stopped.
                for event in self.endpointer.flush():
                    await self._utterance_ended(event)
            await self.finish()
        finally:
            self._running = False
            self._set_state(State.IDLE)

    async def _hear(self, frame: np.ndarray) -> None:
        probability = self.vad.probability(frame)
        # Held lines of a reply prepared during this pause don't count: she is not talking.
        busy = self.speaker.playing or (not self.speaker.idle.is_set() and not self.speaker.holding)
        if busy and not self.settings.barge_in:
            # Without barge-in her own voice must not become a question: hear nothing while she talks.
            return
        if busy and self.speaker.playing:
            self._watch_for_barge_in(frame, probability)
        watch = self.turn_watch
        if watch is not None:
            for pause_id in watch.finished():
                for event in self.endpointer.conclude(pause_id):
                    await self._utterance_ended(event)
        for event in self.endpointer.push(frame, probability):
            if isinstance(event, PauseStarted):
                early = asyncio.create_task(self.transcriber.transcribe(event.audio))
                self._early[event.pause_id] = early
                early.add_done_callback(lambda _task, pause_id=event.pause_id: self._prepare(pause_id))
            elif isinstance(event, TurnCheck) and watch is not None:
                watch.check(event, self._early.get(event.pause_id))
                if not self.source.realtime:
                    # A file has no real time to keep up with: wait for the answer right here.
                    finished = await watch.answer(event.pause_id)
                    self._prepare(event.pause_id)
                    for ended in self.endpointer.conclude(event.pause_id) if finished else ():
                        await self._utterance_ended(ended)
            elif isinstance(event, SpeechResumed):
                task = self._early.pop(event.pause_id, None)
                if task:
                    task.cancel()
                self.preparer.drop()
                if watch is not None:
                    watch.resumed(event.pause_id)
            elif isinstance(event, UtteranceEnded):
                await self._utterance_ended(event)
        if self.endpointer.pause_id is not None:
            self._prepare(self.endpointer.pause_id)

    def _watch_for_barge_in(self, frame: np.ndarray, probability: float) -> None:
        s = self.settings
        floor = max(s.barge_in_floor, s.echo_ratio * max(self._out_levels, default=0.0))
        self._over_floor.append(probability >= s.endpoint.start_threshold and rms(frame) >= floor)
        # Sustained speech: most of the recent frames, so the gaps between words don't reset it.
        if sum(self._over_floor) >= _frames_in(s.barge_in_ms):
            self._over_floor.clear()
            log.debug("barge-in: mic %.3f over floor %.3f", rms(frame), floor)
            self.interrupt()

    def interrupt(self) -> None:
        """Barge-in: stop playback, drop queued speech, end the brain turn, keep only what was said."""
        self.preparer.drop()
        if (self._turn is None or self._turn.done()) and self.speaker.idle.is_set():
            return
        self.barge_ins += 1
        played = self.speaker.cancel()
        self._splitter = SentenceSplitter()
        self._discarding = True
        self.brain.cancel_turn()
        spoken = " ".join(line.text for line in played if line.kind is SpeechKind.SAY)
        # The turn writes its partial reply to the history as it unwinds; trim after that.
        self._trim = asyncio.create_task(self._keep_only_spoken(self._turn, spoken))
        log.info("barge-in: she stopped; kept %r", spoken)
        self._set_state(State.LISTENING)

    async def _keep_only_spoken(self, turn: asyncio.Task | None, spoken: str) -> None:
        if turn is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await turn
        self.brain.keep_only_spoken(spoken)

    def _update_hold(self) -> None:
        hold = self.endpointer.in_speech or not self.speaker.idle.is_set() or (
            self._turn is not None and not self._turn.done())
        if hold != self._holding:
            self._holding = hold
            self.brain.hold_notices(hold)
            for listener in self.on_busy:
                listener(hold)

    async def _utterance_ended(self, event: UtteranceEnded) -> None:
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
        prepared = self.preparer.take(event.pause_id)
        if prepared is not None:
            # The reply prepared during this pause is wanted: its marks are this turn's.
            latency = self._adopt_marks(prepared.latency, latency)
        if early is not None:
            latency.early_transcript_ready = early.done()
            text = await early
        else:
            text = await self.transcriber.transcribe(event.audio)
        latency.mark("transcribed")
        dropped = not text or self._is_echo(text, event, latency) or (
            self.intercept is not None and self.intercept(text))
        if prepared is not None and (dropped or prepared.text != text):
            self.preparer.refuse(prepared)
            prepared = None
        if dropped:
            return
        latency.heard = text
        self.heard.append(text)
        if self._turn is not None and not self._turn.done():
            self.interrupt()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._turn
        if prepared is not None:
            self._start_prepared(prepared, latency)
        else:
            self._start_turn(text, latency)
        if not self.source.realtime:
            # Reading a file faster than real time: take turns, as a person would.
            await self.wait_until_quiet()

    def _is_echo(self, text: str, event: UtteranceEnded, latency: TurnLatency) -> bool:
        spoken_to = latency.speech_end or time.monotonic()
        spoken_from = spoken_to - len(event.audio) / SAMPLE_RATE
        if is_echo(text, self.speaker.recent_played, spoken_from=spoken_from, spoken_to=spoken_to,
                   now=time.monotonic()):
            log.info("dropped my own echo: %r", text)
            return True
        return False

    def _prepare(self, pause_id: int) -> None:
        """Once the pause under way is long enough to be more than a gap between words, and its
        early transcript is ready: while the user may still go on, start her reply (held back).
        Only when she is quiet and free, and once per pause."""
        early = self._early.get(pause_id)
        if early is None or not early.done() or early.cancelled() or early.exception() is not None:
            return
        current = self.preparer.current
        if (current is not None and current.pause_id == pause_id) or not early.result():
            return
        if self.endpointer.pause_id != pause_id or self.endpointer.silence_ms < PREPARE_AFTER_MS:
            return
        quiet = self.speaker.idle.is_set() and not self.speaker.playing and (
            self._turn is None or self._turn.done()) and (self._trim is None or self._trim.done())
        if not self.preparer.supported or not quiet or self.settings.muted or self._closing:
            return  # (her own echo is recognised when the turn ends, and the preparation dropped)
        self.preparer.start(pause_id, early.result())

    @staticmethod
    def _adopt_marks(prepared: TurnLatency, latency: TurnLatency) -> TurnLatency:
        """The prepared turn's marks (its transcript, first token, first synthesis) go on with
        this turn's end of speech and verdicts; ready in time = her first sound was synthesized."""
        prepared.speech_end, prepared.utterance_end = latency.speech_end, latency.utterance_end
        prepared.verdicts = latency.verdicts
        prepared.prepared_in_time = prepared.first_synthesized is not None
        return prepared

    def _start_turn(self, text: str, latency: TurnLatency) -> None:
        self._latency = latency
        self.latencies.append(latency)
        self._discarding = False
        self._splitter = SentenceSplitter()
        self.speaker.new_turn()
        self._turn = asyncio.create_task(self._ask(text, self._trim))
        self._update_hold()

    def _start_prepared(self, prepared: Preparation, latency: TurnLatency) -> None:
        """Her turn is the prepared one: what is synthesized plays now, the rest follows."""
        self._latency = latency
        self.latencies.append(latency)
        self._discarding = False
        self._splitter = prepared.splitter
        self.speaker.new_turn()
        self.speaker.release()
        self._turn = asyncio.create_task(self._ask(prepared.text, self._trim, prepared))
        self._update_hold()

    async def _ask(self, text: str, trim: asyncio.Task | None, prepared: Preparation | None = None) -> None:
        # Only the trim pending when this turn began: a barge-in before this task first runs
        # makes a new trim that waits for this very task.
        if trim is not None:
            await trim
        try:
            if prepared is not None:
                try:
                    await self.brain.ask_prepared(prepared.turn)
                finally:
                    self.preparer.finish(prepared)
            else:
                await self.brain.ask(text)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the brain turn failed")
        finally:
            self._discarding = False
            for sentence in self._splitter.flush():
                self.speaker.say(sentence)
            # Once this task counts as done: release held notices and settle the face.
            asyncio.get_running_loop().call_soon(self._update_hold)
            asyncio.get_running_loop().call_soon(self._settle_state)

    async def wait_until_quiet(self) -> None:
        """Until the current turn has ended and everything queued has been said."""
        for task in (self._turn, self._trim):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self.speaker.idle.wait()
        if self._latency is not None:
            self._latency.log()
            self._latency = None
        self._settle_state()

    async def finish(self) -> None:
        await self.wait_until_quiet()

    # --- the brain's events -------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        if isinstance(event, StateChanged):
            self._state = event.state
            if event.state is State.IDLE and self._running:
                # The brain's turn is over, but she may still be talking: settle after this event.
                asyncio.get_running_loop().call_soon(self._settle_state)
            return
        if self._discarding or self.preparer.shown(event):
            return  # an interrupted turn, or words her mouth already had from the preparation
        if isinstance(event, ReplyDelta):
            if self._latency is not None:
                self._latency.mark("first_token")
            for sentence in self._splitter.push(event.text):
                self.speaker.say(sentence)
        elif isinstance(event, ReplyDone | TurnFinished):
            for sentence in self._splitter.flush():
                self.speaker.say(sentence)
        elif isinstance(event, Speak):
            for sentence in self._splitter.flush():
                self.speaker.say(sentence)
            self.speaker.say(event.text, event.kind)

    def _on_synthesized(self, line: Line) -> None:
        preparing = self.preparer.current
        latency = preparing.latency if preparing is not None and self.speaker.holding else self._latency
        if latency is not None and latency.first_synthesized is None:
            latency.mark("first_synthesized")
            latency.first_fragment = line.text
            latency.first_fragment_synth_ms = round(self.speaker.last_synthesis_ms, 1)

    def _on_playing(self, line: Line) -> None:
        self._set_state(State.SPEAKING)
        self._update_hold()

    def _on_idle(self) -> None:
        self._update_hold()
        self._settle_state()

    def _settle_state(self) -> None:
        """Speaking while her voice plays; listening once she is quiet and no turn runs."""
        if self.speaker.playing:
            self._set_state(State.SPEAKING)
        elif self._turn is not None and not self._turn.done():
            return  # the brain reports thinking or working itself
        elif self.speaker.idle.is_set() and self._running:
            self._set_state(State.IDLE if self.settings.muted else State.LISTENING)

    def _on_first_sample(self, when: float) -> None:
        if self._latency is not None:
            self._latency.mark("first_audio", when)

    def _set_state(self, state: State) -> None:
        if state != self._state:
            self.bus.emit(StateChanged(state))  # _on_event records it

    async def close(self) -> None:
        self._closing = True
        self.source.close()
        for task in self._early.values():
            task.cancel()
        if self.turn_watch is not None:
            self.turn_watch.close()
        self.preparer.drop()
        if self._turn is not None and not self._turn.done():
            self.brain.cancel_turn()
            self._turn.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._turn
        self._unsubscribe()
