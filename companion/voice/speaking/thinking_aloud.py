"""Never a silent wait: when a spoken answer is slow to come, she says one short line of her
own ("Hmm, let me think."), once, and the answer follows it.

The voice loop arms it as it starts a spoken turn, with the moment the user stopped. When
`after_s` has passed since then and the turn is still hers, still thinking, with nothing of it
queued or playing, the line goes to her mouth as that turn's: barge-in and Esc stop it like the
rest of her speech, and a sentence that arrives while it plays is queued right behind it (no
cut-off, no overlap). Typed turns, reminders and notices never arm it.

When her brain was slow on her last spoken turns (a local model on a laptop's processor: its first
words came after the line was due, and well after the turn began), the line is said as the turn
begins: it would come anyway, and the silence before it is what the user feels.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

from companion.events import (
    Event,
    EventBus,
    ReplyDelta,
    SpeakingChanged,
    ToolStarted,
    TurnFinished,
    TurnInterrupted,
    TurnSource,
    TurnStarted,
)
from companion.turns import TurnOwner
from companion.voice.speaking.mouth import Mouth

__all__ = ["ThinkingAloud"]

log = logging.getLogger(__name__)

GRACE_S = 0.3
"""Her brain always gets this long from the start of its turn: when hearing the words was slow,
that is no reason to talk over an answer that comes at once."""
SLOW_TURNS = 2
"""Her brain is judged slow when its first words (or tool call) came after the line was due, and
more than GRACE_S after the turn began, on each of her last this many spoken turns."""


class ThinkingAloud:
    """`arm(since)` before a spoken turn begins; `said` lists the lines said so far."""

    def __init__(self, *, bus: EventBus, turns: TurnOwner, mouth: Mouth,
                 line: Callable[[int], str], after_s: Callable[[], float]) -> None:
        """`line(count)`: what to say now, the count-th line said (empty: nothing);
        `after_s()`: how long after the user stopped (0: never)."""
        self._turns = turns
        self._mouth = mouth
        self._line = line
        self._after_s = after_s
        self.said: list[str] = []
        self._due_at: float | None = None
        """When the line is due (time.monotonic()), while armed."""
        self._timer: asyncio.TimerHandle | None = None
        self._turn = 0
        """The spoken turn armed for, once it has begun (0: not yet)."""
        self._late_words: deque[bool] = deque(maxlen=SLOW_TURNS)
        """On her last spoken turns: did her brain's first words come late (see SLOW_TURNS)?"""
        self._waiting_words: tuple[int, float, float] | None = None
        """(turn, when it started, when the line was due): a spoken turn not answered yet."""
        self._unsubscribe = bus.subscribe(self._on_event)

    @property
    def brain_is_slow(self) -> bool:
        return len(self._late_words) == SLOW_TURNS and all(self._late_words)

    @property
    def armed(self) -> bool:
        return self._due_at is not None

    def arm(self, since: float | None) -> None:
        """A spoken turn is about to begin; the user stopped at `since` (time.monotonic(),
        None: now). The wait counts from then: what hearing the words took is part of it."""
        self.disarm()
        after = self._after_s()
        if after > 0:
            now = time.monotonic()
            self._due_at = (now if since is None else min(since, now)) + after

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._due_at = None
        self._turn = 0

    def _on_event(self, event: Event) -> None:
        self._time_first_words(event)
        if self._due_at is None:
            return
        match event:
            case TurnStarted(turn=turn, source=TurnSource.SPOKEN) if not self._turn:
                self._turn = turn
                now = time.monotonic()
                wait = max(self._due_at - now, GRACE_S)
                if self.brain_is_slow:
                    log.info("her brain's first words came after her thinking line was due on her last %d "
                             "turns: the line comes as turn %d begins", SLOW_TURNS, turn)
                    wait = 0.0
                self._timer = asyncio.get_running_loop().call_later(wait, self._due)
            case TurnStarted():
                self.disarm()  # another turn took the floor
            case SpeakingChanged(turn=turn, queued=True) if turn and turn == self._turn:
                self.disarm()  # her own words (the answer, a tool's line) are on their way
            case TurnInterrupted(turn=turn) | TurnFinished(turn=turn) if turn and turn == self._turn:
                self.disarm()

    def _time_first_words(self, event: Event) -> None:
        match event:
            case TurnStarted(turn=turn, source=TurnSource.SPOKEN) if self._due_at is not None:
                self._waiting_words = (turn, time.monotonic(), self._due_at)
            case ReplyDelta(turn=turn) | ToolStarted(turn=turn) if self._waiting_words and turn == self._waiting_words[0]:
                _turn, started, due = self._waiting_words
                now = time.monotonic()
                self._late_words.append(now >= due and now - started >= GRACE_S)
                self._waiting_words = None
            case TurnInterrupted(turn=turn) | TurnFinished(turn=turn) if (
                    self._waiting_words and turn == self._waiting_words[0]):
                self._waiting_words = None  # no words came (an error, stopped): nothing learned

    def _due(self) -> None:
        turn = self._turn
        self._timer = None
        self.disarm()
        current = self._turns.current
        if not turn or current is None or current.id != turn or current.interrupted or not current.thinking:
            return
        if self._mouth.busy:
            return  # she is saying something already
        text = self._line(len(self.said))
        if not text:
            return
        self.said.append(text)
        log.info("no answer ready in time (turn %d): she says %r", turn, text)
        self._mouth.think_aloud(text, turn)

    def close(self) -> None:
        self.disarm()
        self._unsubscribe()
