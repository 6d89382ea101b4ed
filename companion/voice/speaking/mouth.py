"""Her mouth: the events of the current turn → sentences → the speaker. The one way out for
her voice: spoken and typed turns, reminders and background results all speak through it and
obey the same interruption.

It speaks only for the current turn (turns.TurnOwner): events of a turn that was interrupted
or replaced arrive late and are dropped, so speech of a finished turn never plays later. On
TurnInterrupted it stops that turn's line playing and drops its lines queued (a notice, an
event of no turn, is never dropped with a turn: waiting, it still plays; playing, it ends), and tells `keep_heard(turn, text)` exactly which of that turn's sentences
were played, for the history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from companion.events import (
    Event,
    EventBus,
    ReplyDelta,
    ReplyDone,
    Speak,
    SpeakingChanged,
    SpeechKind,
    TurnFinished,
    TurnInterrupted,
    TurnStarted,
)
from companion.turns import TurnOwner
from companion.voice.speaking.sentences import SentenceSplitter
from companion.voice.speaking.speaker import Line, Speaker

__all__ = ["Mouth"]

log = logging.getLogger(__name__)


class Mouth:
    """Subscribes to the bus; `close()` unsubscribes. `on_first_text`, `on_synthesized` and
    `on_playing` are hooks for latency marks and the narration cache's quiet moments."""

    def __init__(self, *, bus: EventBus, speaker: Speaker, turns: TurnOwner,
                 keep_heard: Callable[[int, str], None],
                 already_said: Callable[[Event], bool] = lambda _event: False) -> None:
        """`already_said(event)`: words a prepared reply put in her mouth before its turn began."""
        self.bus = bus
        self._already_said = already_said
        self._adopted: SentenceSplitter | None = None
        self.speaker = speaker
        self.turns = turns
        self._keep_heard = keep_heard
        self._turn = turns.current.id if turns.current is not None else 0
        self._splitter = SentenceSplitter()
        self._reported = (False, False)  # (playing, queued) last said on the bus
        self.on_first_text: list[Callable[[], None]] = []
        self.on_synthesized: list[Callable[[Line], None]] = []
        self.on_changed: list[Callable[[], None]] = []
        """Told whenever she starts or stops playing, or runs out of words."""
        speaker.on_synthesized = self._synthesized
        speaker.on_playing = lambda _line: self._report()
        speaker.on_idle = self._report
        self._unsubscribe = bus.subscribe(self._on_event)

    @property
    def busy(self) -> bool:
        return self.speaker.busy

    @property
    def playing(self) -> bool:
        return self.speaker.playing

    @property
    def recent_played(self):
        return self.speaker.recent_played

    def _on_event(self, event: Event) -> None:
        if isinstance(event, TurnStarted):
            self._turn = event.turn
            self.speaker.new_turn()
            adopted, self._adopted = self._adopted, None
            self._splitter = adopted or SentenceSplitter()
            if adopted is not None:
                self.speaker.release()  # the prepared reply's first words play now
            return
        if isinstance(event, TurnInterrupted):
            if event.turn == self._turn:
                self._stop(event.turn, closing=event.reason == "closing")
            return
        turn = getattr(event, "turn", None)
        if turn is None:
            return
        if turn == 0:
            # Not part of any turn (a notice emitted outside one): said, but never reply text.
            if isinstance(event, Speak):
                self.speaker.say(event.text, event.kind, 0, notice=True)
                self._report()
            return
        if turn != self._turn or not self.turns.is_current(turn):
            log.debug("ignored a late event of turn %d: %r", turn, event)
            return
        if self._already_said(event):
            return
        if isinstance(event, ReplyDelta):
            for hook in self.on_first_text:
                hook()
            for sentence in self._splitter.push(event.text):
                self._say(sentence, SpeechKind.SAY, turn)
        elif isinstance(event, ReplyDone | TurnFinished):
            for sentence in self._splitter.flush():
                self._say(sentence, SpeechKind.SAY, turn)
        elif isinstance(event, Speak):
            for sentence in self._splitter.flush():
                self._say(sentence, SpeechKind.SAY, turn)
            self._say(event.text, event.kind, turn)

    @property
    def paused(self) -> bool:
        return self.speaker.paused

    def pause(self) -> bool:
        """Someone talks over her: stop now, keeping her place (see Speaker.pause)."""
        paused = self.speaker.pause()
        self._report()
        return paused

    def resume(self) -> None:
        """It was no interruption: she goes on from the word she was in."""
        self.speaker.resume()
        self._report()

    def adopt(self, splitter: SentenceSplitter) -> None:
        """The next turn is a prepared reply: its held lines play when it begins, and its
        reply goes on from the sentence the preparation was in the middle of."""
        self._adopted = splitter

    def think_aloud(self, text: str, turn: int) -> None:
        """Her thinking line for `turn` (speaking.thinking_aloud): queued as the turn's, so its
        interruption stops it and her answer plays right after it, but never taken for reply
        text (the history keeps only SAY lines as heard)."""
        self._say(text, SpeechKind.THINKING, turn)

    def _say(self, text: str, kind: SpeechKind, turn: int) -> None:
        self.speaker.say(text, kind, turn)
        self._report()

    def _stop(self, turn: int, *, closing: bool = False) -> None:
        # Her reply stops; a notice waiting to be said (her voice server gone) still is.
        played = self.speaker.cancel() if closing else self.speaker.interrupt(turn)
        self._splitter = SentenceSplitter()
        # Its prepared first words were said before it had a turn id: they carry their hold.
        heard = " ".join(line.text for line in played
                         if line.kind is SpeechKind.SAY and (line.turn == turn or line.hold))
        log.info("she stopped (turn %d); the user heard %r", turn, heard)
        self._keep_heard(turn, heard)
        self._report()

    def _synthesized(self, line: Line) -> None:
        for hook in self.on_synthesized:
            hook(line)

    def _report(self) -> None:
        playing, queued = self.speaker.playing, self.speaker.busy
        if self._turn:
            self.turns.speaking(self._turn, queued)
        if (playing, queued) != self._reported:
            self._reported = (playing, queued)
            self.bus.emit(SpeakingChanged(playing, self._turn, queued=queued))
        for hook in self.on_changed:
            hook()

    def close(self) -> None:
        self._unsubscribe()
