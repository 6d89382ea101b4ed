"""Who may start a turn: the voice loop's door between the ear and the brain.

It keeps the policy (voice.addressing.addressed.Addressing) and the wake-word thread (voice.addressing.wake) in
step with the loop: the detector's detections cross to the event loop here, in one place;
her answering opens the follow-up window; her face hears about it as AttentionChanged.
While she is not called nothing leaves this door: no brain request, no history, no
transcript line (the log says only how many words were ignored).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace

from companion.events import AttentionChanged, EventBus, ReplyDone
from companion.voice.addressing.addressed import (
    Addressing,
    AddressSettings,
    Attention,
    Verdict,
    without_call,
)
from companion.voice.addressing.voice_owner import by_voice

__all__ = ["Calling"]

log = logging.getLogger(__name__)

LEARN_WAIT_S = 20.0
"""How long an utterance read from a file waits for her names to be learned (only at a name's
first start: then they are cached): judged before, "Jeeves" heard as "Geeves" would not call
her. Live, only words that call her by no name she can read yet wait, and for less."""
LEARN_WAIT_LIVE_S = 10.0
"""How long live words that may be a call by a name still being learned wait for it."""


class Calling:
    """`clock()` is the ear's stream time now; `her_voice_playing()` is True while she plays."""

    def __init__(self, bus: EventBus, clock: Callable[[], float], her_voice_playing: Callable[[], bool]) -> None:
        self.bus = bus
        self.policy = Addressing()
        self._clock = clock
        self._playing = her_voice_playing
        self.wake = None
        """The wake-word detector (voice.addressing.wake.WakeWordThread) while When called is on, else None."""
        self.echo_cancelled = False
        """The detector hears through an echo canceller: her own voice is already gone from it."""
        self.on_called: list[Callable[[str], None]] = []
        """Told what called her (a cue: a chime or "Yes?"), the moment she is called."""
        self.verdicts: list[Verdict] = []
        self.wakes: list[float] = []
        """Stream times of the wake words that called her (not those ignored as her own voice)."""
        self.names: Callable[[], tuple[str, ...]] | None = None
        """Her name and aliases, read afresh for each utterance (a personality edit applies at once)."""
        self.voices = None
        """Who is speaking (voice.voiceprint.Voices) when knowing voices is on, else None: then
        the follow-up window, Only me and talking over her go by words alone."""
        self.learning = None
        """How her hearing writes her names (voice.addressing.learning.NameLearning), or None."""
        self.wait_for_learning = False
        """Judge no utterance before her names are learned (a file read faster than real time)."""
        self._attention: Attention | None = None
        self._last_line = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        bus.subscribe(self._on_event)

    @property
    def settings(self) -> AddressSettings:
        return self.policy.settings

    def apply(self, settings: AddressSettings, wake_word: str = "") -> None:
        """A new mode, names or window; the detector runs only in When called, with `wake_word`."""
        self.policy.apply(settings)
        if self.learning is not None and not (settings.mode.calls and settings.name_wakes):
            self.learning.hint(())  # no name can call her: her hearing hears the room untold
        wanted = wake_word if settings.mode.calls and wake_word else ""
        if self.wake is not None and self.wake.name != wanted:
            self.wake.close()
            self.wake = None
        if wanted and self.wake is None:
            from companion.voice.addressing.wake import WakeWordThread

            with contextlib.suppress(RuntimeError):  # a Qt slot under qasync may see no running loop
                self._loop = asyncio.get_running_loop()
            self.wake = WakeWordThread(wanted, self._heard_wake_word)
        self.report()

    def hear(self, frame, stream_s: float) -> None:
        """Every frame the ear hears (an Ear.hearers entry): the detector queues it."""
        if self.wake is not None:
            self.wake.feed(frame, stream_s)
        if self.voices is not None:
            self.voices.hear(frame, stream_s)

    # --- calls ---------------------------------------------------------------------------------
    def _heard_wake_word(self, stream_s: float, score: float) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._woken, stream_s)

    def _woken(self, stream_s: float) -> None:
        if self._playing() and not self.echo_cancelled:
            # Without an echo canceller this may be her own voice saying the word.
            log.info("ignored a wake word heard while I was speaking")
            return
        self.wakes.append(stream_s)
        self.policy.call(stream_s, wake=True)
        self._called("wake word")

    def push_to_talk(self, down: bool) -> None:
        """The key was pressed (`down`) or released: what is said under it is hers to answer."""
        self.policy.push_to_talk(self._clock(), down)
        self._called("push-to-talk")

    def _called(self, how: str) -> None:
        self.report(how)
        for listener in self.on_called:
            listener(how)

    # --- utterances --------------------------------------------------------------------------
    async def judge(self, text: str, start_s: float, end_s: float, *, stopped_her: bool = False) -> Verdict:
        """Whether the utterance starts a turn (waits for the detector to have heard it all);
        `stopped_her`: it talked over her loud enough to stop her."""
        if self.wake is not None:
            await asyncio.to_thread(self.wake.wait_until, end_s)
        names = self.names() if self.names is not None else self.settings.names
        heard = self.settings.heard
        if self.learning is not None and names and self.settings.mode.calls and self.settings.name_wakes:
            if self.wait_for_learning:
                await self.learning.wait(names, LEARN_WAIT_S)
            else:
                self.learning.start(names)
            heard = self.learning.forms(names)
            if self.learning.pending(names):
                self._apply_names(names, heard)
                if not self.policy.judge(text, start_s, end_s, peek=True).turn:
                    # Her names just changed (another personality) and a spelling of theirs is
                    # still being learned: these words may be a call she can't read yet ("Pip"
                    # written "Tep"), so they wait for it rather than being ignored. The ear
                    # reads on meanwhile; only the judging of what follows waits.
                    await self.learning.wait(names, LEARN_WAIT_LIVE_S)
                    heard = self.learning.forms(names)
        self._apply_names(names, heard)
        was = self.policy.attention(start_s)
        if self.voices is not None:
            verdict = await by_voice(self.policy, self.voices, text, start_s, end_s, stopped_her=stopped_her)
        else:
            verdict = self.policy.judge(text, start_s, end_s, stopped_her=stopped_her)
        self.verdicts.append(verdict)
        if not verdict.turn:
            log.info("not called (%s): %d words ignored", verdict.reason, len(text.split()))
        if verdict.called and was != Attention.ATTENTIVE and verdict.reason != "called":
            self._called(verdict.reason)  # her name: attentive the moment the words are known
        else:
            self.report(verdict.reason)
        return verdict

    async def wants_words(self, start_s: float, end_s: float) -> bool:
        """Should the ear transcribe this utterance? (voice.addressing.addressed.Addressing.needs_words)"""
        if self.policy.needs_words(start_s, end_s):
            return True
        if self.wake is not None:
            await asyncio.to_thread(self.wake.wait_until, end_s)
        return self.policy.needs_words(start_s, end_s)

    def _apply_names(self, names: tuple[str, ...], heard: tuple[str, ...]) -> None:
        if (names, heard) != (self.settings.names, self.settings.heard):
            self.policy.apply(replace(self.settings, names=names, heard=heard))

    def without_call(self, text: str) -> str:
        """`text` without her name or the wake word in front ("Mira, yes, run it" -> "yes, run it")."""
        names = self.names() if self.names is not None else self.settings.names
        heard = self.learning.forms(names) if self.learning is not None else self.settings.heard
        return without_call(text, replace(self.settings, names=names, heard=heard))

    def learn(self) -> None:
        """Start learning how her names are heard (in the background), when her name can call her.
        Not in Always answer: learning tells her hearing the names, and told, Whisper decodes every
        utterance that does not start with one twice (+100 ms median on ten plain questions, up to
        +320), a cost each turn would pay for nothing; a switch to a calling mode learns them at
        its first utterance (judge)."""
        if (self.learning is not None and self.names is not None and self.settings.name_wakes
                and self.settings.mode.calls):
            names = self.names()
            if names:
                self.learning.start(names)

    def peek(self, text: str, start_s: float, end_s: float) -> Verdict:
        """Would this (early) transcript start a turn, and with what question? Nothing is used up."""
        return self.policy.judge(text, start_s, end_s, peek=True)

    def answering(self) -> None:
        self.policy.answering()
        self.report()

    def answered(self) -> None:
        """She has finished answering (her turn is over and everything said)."""
        self.policy.answered(self._clock(), self._last_line)
        self.report()

    def _on_event(self, event) -> None:
        if isinstance(event, ReplyDone) and event.text.strip():
            self._last_line = event.text

    # --- her face ------------------------------------------------------------------------------
    def report(self, how: str = "") -> None:
        """Tell the face if her attention changed; check again when a window will have closed."""
        attention = self.policy.attention(self._clock())
        if attention != self._attention:
            self._attention = attention
            self.bus.emit(AttentionChanged(str(attention), how if attention == Attention.ATTENTIVE else ""))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if attention == Attention.ATTENTIVE:
            loop = self._loop
            with contextlib.suppress(RuntimeError):  # no loop at all (a unit test): nobody to tell later
                loop = asyncio.get_running_loop()
            if loop is not None and not loop.is_closed():
                self._loop = loop
                self._timer = loop.call_later(1.0, self.report)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self.voices is not None:
            self.voices.close()
        if self.learning is not None:
            self.learning.close()
        if self.wake is not None:
            self.wake.close()
            self.wake = None
