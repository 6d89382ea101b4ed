"""The voice loop: her ear and her mouth, and who gets the floor.

The ear (voice.turns.ear) turns the microphone into "the user said X"; the mouth (voice.speaking.mouth)
turns the current turn's events into speech. The loop in between acts on whose words count
(voice.whose_words): an answer to an open approval card goes to the safety layer (it starts no
turn); words said to her start a new spoken turn, which interrupts the one before. Talking over
her stops her voice at once but keeps her place: when the words that stopped her turn out to be
words for her, that is one interruption of the current turn (turns.TurnOwner), which stops her
model stream, tool, queued speech and playback together; when they were a cough, an "mm-hm",
someone else's words or nothing within FALSE_STOP_S, she goes on from the word she was in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from companion.events import EventBus, HoldingChanged, ListeningChanged, UserHeard
from companion.turns import TurnOwner
from companion.voice.addressing.calling import Calling
from companion.voice.hearing.stt import Transcriber
from companion.voice.hearing.vad import SpeechDetector
from companion.voice.sound.audio import AudioSink, AudioSource
from companion.voice.speaking.mouth import Mouth
from companion.voice.speaking.speaker import Line, Speaker
from companion.voice.speaking.thinking_aloud import ThinkingAloud
from companion.voice.turns.barge_in import FALSE_STOP_S, has_words, only_backchannel
from companion.voice.turns.ear import Ear, Utterance
from companion.voice.turns.ear_settings import EarSettings
from companion.voice.turns.latency import TurnLatency
from companion.voice.turns.preparing import Preparation, ReplyPreparer
from companion.voice.turns.smart_turn import SmartTurn
from companion.voice.whose_words import WhoseWords

# The three sentences are re-exported: the tests of the card, knowing voices and her face name them here.
__all__ = ["BrainPort", "LoopSettings", "VoiceLoop"]

log = logging.getLogger(__name__)

LoopSettings = EarSettings
"""What the loop is tuned by: the ear's settings (barge-in, mute, end of turn)."""


class BrainPort(Protocol):
    """What the voice loop needs from the brain (companion.voice.brain_port adapts the runtime)."""

    turns: TurnOwner

    async def ask(self, text: str) -> None:
        """Run one spoken turn; its reply arrives as events on the bus."""

    def interrupt(self, reason: str) -> bool:
        """End the current turn now (see TurnOwner.interrupt)."""

    def keep_heard(self, turn: int, heard: str) -> None:
        """After an interruption: turn `turn`'s reply in the history becomes just what was played."""

    def answer_aloud(self, text: str) -> bool:
        """A spoken answer to an open approval request, given through the safety layer; True
        when `text` was one (it then starts no turn)."""

    def hold_notices(self, hold: bool) -> None:
        """Background results wait while the user speaks or she talks."""

    # Optional: card_open() -> bool, an approval card waits for an answer (companion.voice.brain_port
    # has it). While one waits, what is said is read as its answer, and nothing said withdraws it;
    # card_waiting_line() -> str, what she says when called with no answer (else CARD_WAITS).

    # Optional (companion.voice.brain_port.CompanionBrain has them): a reply prepared during
    # the pause. prepare(text, front) -> PreparedTurn; ask_prepared(prepared) runs it as the turn.
    # thinking_line(count) -> str: her line when a spoken answer is slow (none without it).


class VoiceLoop:
    """Runs until the source ends or close() is called. `latencies` keeps every turn's stages."""

    def __init__(
        self, *, source: AudioSource, speaker: Speaker, vad: SpeechDetector, transcriber: Transcriber,
        brain: BrainPort, bus: EventBus, settings: LoopSettings | None = None, sink: AudioSink | None = None,
        turn_model: SmartTurn | None = None,
    ) -> None:
        self.source = source
        self.speaker = speaker
        self.brain = brain
        self.bus = bus
        self.preparer = ReplyPreparer(brain, speaker)
        """The reply prepared during the current pause, if any (a tentative turn, held back)."""
        self.mouth = Mouth(bus=bus, speaker=speaker, turns=brain.turns, keep_heard=brain.keep_heard,
                           already_said=self.preparer.shown)
        self.thinking = ThinkingAloud(bus=bus, turns=brain.turns, mouth=self.mouth, line=self._thinking_line,
                                      after_s=lambda: self.ear.settings.thinking_line_s)
        """Her one short line when a spoken answer is slow to come."""
        self.ear = Ear(source=source, vad=vad, transcriber=transcriber, her_voice=self.mouth,
                       heard=self._heard, barged_in=self._barged_in, settings=settings, sink=sink,
                       turn_model=turn_model, pauses=self)
        if self.ear.turn_watch is not None:
            self.ear.turn_watch.on_hold = lambda holding: bus.emit(HoldingChanged(holding))
        self.calling = Calling(bus, clock=lambda: self.ear.endpointer.stream_s,
                               her_voice_playing=lambda: self.mouth.playing)
        """Who may start a turn (listening mode, her name, the wake word, the follow-up window)."""
        self.ear.hearers.append(self.calling.hear)
        self.whose = WhoseWords(brain=brain, bus=bus, calling=self.calling)
        """Whose words count: a turn for her, the card's answer, or left unanswered."""
        self.ear.words.words_wanted = self.whose.wants_words
        self.ear.early_words = self.whose.early_words
        self.enrolling = False
        """A voice is being learned from a reading (VoiceSession.enrolling): what is heard is read
        aloud to the dialog, never a turn (an utterance already on its way to Whisper included)."""
        self.latencies: list[TurnLatency] = []
        self.heard: list[str] = []
        self.barge_ins = 0
        """Times talking over her ended her turn."""
        self.false_stops = 0
        """Times she was stopped by something that was no interruption, and went on."""
        self._stopped_at_s: float | None = None
        """Stream time she was stopped (paused) by talking over her, while it is undecided."""
        self.on_busy: list = []
        """Callables told True while the user speaks or a turn runs, False when quiet again."""
        self._turn: asyncio.Task | None = None
        self._holding = False
        self._latency: TurnLatency | None = None
        self._listening: bool | None = None
        self.mouth.on_first_text.append(lambda: self._mark("first_token"))
        self.mouth.on_synthesized.append(self._on_synthesized)
        self.mouth.on_changed.append(self._update_hold)
        if sink is not None:
            sink.add_start_listener(lambda when: self._mark("first_audio", when))

    # --- compatibility views onto the ear -------------------------------------------------
    @property
    def settings(self) -> LoopSettings:
        return self.ear.settings

    @property
    def transcriber(self):
        return self.ear.transcriber

    @property
    def endpointer(self):
        return self.ear.endpointer

    @property
    def turn_watch(self):
        return self.ear.turn_watch

    def apply(self, settings: LoopSettings) -> None:
        """New settings take effect now; a new end-of-turn silence applies from the next utterance."""
        self.ear.apply(settings)
        self._report_listening()

    # --- running ------------------------------------------------------------------------
    async def run(self) -> None:
        self._running = True
        self._report_listening()
        try:
            await self.ear.run(after_frame=self._update_hold)
            await self.finish()
        finally:
            self._running = False
            self._report_listening()

    def _report_listening(self) -> None:
        listening = getattr(self, "_running", False) and not self.ear.settings.muted
        if listening != self._listening:
            self._listening = listening
            self.bus.emit(ListeningChanged(listening))

    def _barged_in(self) -> None:
        if self.whose.card_open():
            # Talking over her while a card waits is answering it: stopping her turn would
            # withdraw the card ("Nobody answered in time"), so her short line goes on.
            log.info("talked over while a card waits: her turn goes on")
            return
        if self.mouth.paused:
            return  # still talking over her: the words decide when they end
        if self.brain.turns.live and self.mouth.pause():
            # She stops now; whether it was an interruption is known once the words are.
            self._stopped_at_s = self.ear.endpointer.stream_s
            return
        self._stop_turn()

    def _stop_turn(self) -> None:
        self._stopped_at_s = None
        self.preparer.drop()
        if self.brain.interrupt("barge-in"):
            self.barge_ins += 1

    def _go_on(self, why: str) -> None:
        """What stopped her was no interruption: she says the rest of her line."""
        self._stopped_at_s = None
        if self.mouth.paused:
            log.info("she goes on (%s)", why)
            self.false_stops += 1
            self.ear.barge_in.went_on()
            self.mouth.resume()

    def _heard_within_her_turn(self, text: str) -> None:
        """Words that asked nothing of her ("Mm-hmm.", "Right.") were still said: the transcript
        has them, as a line of the turn she is answering (no turn of their own, nothing to the brain)."""
        turn = self.brain.turns.current
        if turn is not None and has_words(text):
            self.bus.emit(UserHeard(text, spoken=True, turn=turn.id))

    def _check_false_stop(self) -> None:
        """Stopped, then no words for FALSE_STOP_S, with nothing still said or being heard."""
        if self._stopped_at_s is None:
            return
        if not self.mouth.paused:
            self._stopped_at_s = None  # ended meanwhile (Esc, a new turn, cancelled)
            return
        ear = self.ear
        if ear.in_speech or ear.hearing_words:
            return
        last_sound = max(self._stopped_at_s, ear.barge_in.fired_at_s or 0.0)
        if ear.endpointer.stream_s - last_sound >= FALSE_STOP_S:
            self._go_on("no words followed")

    def interrupt(self, reason: str = "interrupted") -> bool:
        """Esc, push-to-talk: end the current turn (model, tool, speech) now."""
        self.preparer.drop()
        return self.brain.interrupt(reason)

    # --- pauses: a reply prepared while the user may still go on ---------------------------
    def pause_ready(self, pause_id: int, text: str) -> None:
        current = self.preparer.current
        if current is not None and current.pause_id == pause_id:
            return
        quiet = not self.mouth.busy and (self._turn is None or self._turn.done())
        if self.whose.card_open():
            return  # what is said now answers the card: no reply to prepare
        if not quiet or not self.preparer.supported:
            return
        # To where the speech stopped, not now: a push-to-talk in a slow pause made a stranger's line hers.
        verdict = self.calling.peek(text, self.ear.speech_start_s, self.ear.pause_speech_end_s)
        if verdict.turn:  # not called: nothing reaches the brain, not even a prepared reply
            # Prepared for the question as it will be asked (the wake word's call taken off),
            # or the reply would be refused when the turn comes and asked for again.
            self.preparer.start(pause_id, verdict.question(text))

    def words_so_far(self, text: str) -> None:
        """The words heard so far while the user still talks go ahead to fill her brain's prompt
        cache (brain/fill.py), when a turn would start on them: at the turn's end only the last
        words are left for the server to read."""
        if self.whose.card_open() or self.mouth.busy or (self._turn is not None and not self._turn.done()):
            return
        verdict = self.calling.peek(text, self.ear.speech_start_s, self.ear.endpointer.stream_s)
        if verdict.turn:
            self.preparer.heard_so_far(verdict.question(text))

    def resumed(self, pause_id: int) -> None:
        self.preparer.drop()

    def discarded(self, pause_id: int | None) -> None:
        prepared = self.preparer.take(pause_id)
        if prepared is not None:
            self.preparer.refuse(prepared)
        if self._stopped_at_s is not None and not self.ear.in_speech:
            self._go_on("no words in what stopped her")  # a cough, her own echo, silence

    def _update_hold(self) -> None:
        self._check_false_stop()
        hold = self.ear.in_speech or self.mouth.busy or (self._turn is not None and not self._turn.done())
        if hold != self._holding:
            self._holding = hold
            self.brain.hold_notices(hold)
            for listener in self.on_busy:
                listener(hold)
            if not hold:
                self.whose.quiet()

    async def _heard(self, utterance: Utterance) -> None:
        text, latency = utterance.text, utterance.latency
        if utterance.aside:
            self._heard_within_her_turn(text)  # a listening noise under her voice: no turn
            return
        prepared = self.preparer.take(utterance.pause_id)
        if self.enrolling:
            if prepared is not None:
                self.preparer.refuse(prepared)
            log.info("voice: %r was read to Learn my voice…: no turn", text)
            return
        if self.whose.card_open():
            if prepared is not None:
                self.preparer.refuse(prepared)
            await self.whose.to_the_card(utterance)
            return
        if self._stopped_at_s is not None and only_backchannel(text):
            if prepared is not None:
                self.preparer.refuse(prepared)
            self._heard_within_her_turn(text)
            self._go_on(f"{text!r} is no interruption")
            return
        question = await self.whose.question(utterance)
        if question is None:
            if prepared is not None:
                self.preparer.refuse(prepared)
            # Words that were not for her are nothing to go on with: a question right after a
            # stranger's line (under push-to-talk, or with her name) is heard alone.
            self.ear.words.going_on.forget()
            self._go_on("not said to her")
            return  # not called: no turn, no brain, no history, no transcript
        text = question
        if self._stopped_at_s is not None:
            self._stop_turn()  # words for her: they stopped her turn
        if prepared is not None:
            # The reply prepared during this pause is wanted: its marks are this turn's.
            latency = _adopt_marks(prepared.latency, latency)
        if self.brain.answer_aloud(text):
            if prepared is not None:
                self.preparer.refuse(prepared)
            return  # an answer to an approval card: no new turn, nothing interrupted
        if prepared is not None and prepared.text != text:
            self.preparer.refuse(prepared)
            prepared = None
        self.heard.append(text)
        self._latency = latency
        self.latencies.append(latency)
        if prepared is not None:
            self.mouth.adopt(prepared.splitter)
        # A new turn: the one before is interrupted.
        self.whose.answering()
        self.thinking.arm(latency.speech_end)
        self._turn = asyncio.create_task(self._ask(text, prepared))
        self._update_hold()
        if not self.source.realtime:
            # Reading a file faster than real time: take turns, as a person would.
            await self.wait_until_quiet()

    async def _ask(self, text: str, prepared: Preparation | None = None) -> None:
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
            # Once this task counts as done: release held notices.
            asyncio.get_running_loop().call_soon(self._update_hold)

    async def wait_until_quiet(self) -> None:
        """Until the current turn has ended and everything queued has been said."""
        if self._turn is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._turn
        await self.speaker.idle.wait()
        if self._latency is not None:
            self._latency.log()
            self._latency = None
        self._update_hold()

    async def finish(self) -> None:
        await self.wait_until_quiet()

    # --- latency marks --------------------------------------------------------------------
    def _mark(self, name: str, when: float | None = None) -> None:
        if self._latency is not None:
            self._latency.mark(name, when)

    def _on_synthesized(self, line: Line) -> None:
        preparing = self.preparer.current
        latency = preparing.latency if preparing is not None and self.speaker.holding else self._latency
        if latency is not None and latency.first_synthesized is None:
            latency.mark("first_synthesized")
            latency.first_fragment = line.text
            latency.first_fragment_synth_ms = round(self.speaker.last_synthesis_ms, 1)

    def _thinking_line(self, count: int) -> str:
        line = getattr(self.brain, "thinking_line", None)
        return line(count) if line is not None else ""

    async def close(self) -> None:
        self.thinking.close()
        self.calling.close()
        self.ear.close()
        self.preparer.drop()
        if self._turn is not None and not self._turn.done():
            self.brain.interrupt("closing")
            self._turn.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._turn
        self.mouth.close()


def _adopt_marks(prepared: TurnLatency, latency: TurnLatency) -> TurnLatency:
    """The prepared turn's marks (its transcript, first token, first synthesis) go on with this
    turn's end of speech and verdicts; ready in time = her first sound was synthesized."""
    prepared.speech_end, prepared.utterance_end = latency.speech_end, latency.utterance_end
    prepared.verdicts = latency.verdicts
    prepared.early_transcript_ready = latency.early_transcript_ready
    prepared.prepared_in_time = prepared.first_synthesized is not None
    prepared.heard = latency.heard
    return prepared
