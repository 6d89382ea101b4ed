"""The typed events the core speaks through, and the one bus that delivers them.

Every consumer (the terminal transcript, the voice loop, the window) subscribes to an
EventBus and receives these frozen dataclasses; nothing else crosses from core to UI.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

log = logging.getLogger(__name__)


class SpeechKind(StrEnum):
    SAY = "say"
    ANNOUNCE = "announce"
    HEARTBEAT = "heartbeat"
    COMPLETE = "complete"
    FAIL = "fail"
    THINKING = "thinking"
    """Her line while no sentence of a spoken answer is ready yet ("Hmm, let me think."): never reply text."""


class State(StrEnum):
    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"
    WORKING = "working"
    WAITING = "waiting"
    """A card waits for the user's approval."""
    OFFLINE = "offline"
    """Her brain could not be reached on the last try."""


class TurnSource(StrEnum):
    """What started a turn."""

    SPOKEN = "spoken"
    TYPED = "typed"
    REMINDER = "reminder"
    NOTICE = "notice"
    """A background job's result, or something she has to tell (a broken personality file)."""


class Outcome(StrEnum):
    OK = "ok"
    FAILED = "failed"
    REFUSED = "refused"
    INTERRUPTED = "interrupted"


EXPRESSIONS: tuple[str, ...] = (
    "neutral", "happy", "excited", "sad", "crying", "angry", "surprised",
    "embarrassed", "thinking", "sleepy", "affectionate", "confused", "scared", "determined",
)
"""The 14 faces she can make; emotion tags and tool EXPRESSIONS use these names."""


@dataclass(frozen=True)
class UserHeard:
    """What the user said (transcribed) or typed."""

    text: str
    spoken: bool = True
    turn: int = 0
    """The turn it belongs to (0: none; stamped by the bus from the running turn)."""


@dataclass(frozen=True)
class ReplyDelta:
    """A piece of her reply as it streams: reasoning and the emotion tag already removed."""

    text: str
    turn: int = 0
    """The turn it belongs to (0: none; stamped by the bus from the running turn)."""


@dataclass(frozen=True)
class ReplyDone:
    """One model round's whole visible reply text (may be empty before a tool call)."""

    text: str
    turn: int = 0
    """The turn it belongs to (0: none; stamped by the bus from the running turn)."""


@dataclass(frozen=True)
class Speak:
    """A line she says that is not streamed reply text: narration, notices, error sentences."""

    kind: SpeechKind
    text: str
    tool: str | None = None
    turn: int = 0
    """The turn it belongs to (0: none; stamped by the bus from the running turn)."""


@dataclass(frozen=True)
class ExpressionChanged:
    """Her face changes. `reason` says why, e.g. "focus: search_files" or "reply"."""

    name: str
    reason: str = ""
    turn: int = 0
    """The turn it belongs to (0: none; stamped by the bus from the running turn)."""


@dataclass(frozen=True)
class ToolStarted:
    name: str
    call_id: str
    arguments: dict[str, Any] = field(default_factory=dict)
    turn: int = 0
    """The turn it belongs to (0: none; stamped by the bus from the running turn)."""


@dataclass(frozen=True)
class ToolFinished:
    name: str
    call_id: str
    outcome: Outcome
    detail: str = ""
    turn: int = 0
    """The turn it belongs to (0: none; stamped by the bus from the running turn)."""


@dataclass(frozen=True)
class ApprovalNeeded:
    """The safety layer asks the user; answer through the gate with `request_id`."""

    request_id: str
    command: str
    reason: str
    saveable: bool
    timeout_s: float
    access: str = ""
    """What a yes lets it touch: "read" (the workspace read-only), "write", or "" (no process)."""
    network: bool = False
    """A yes also gives it the internet."""
    once_only: str = ""
    """Why "always" is not offered (an interpreter running a workspace file, …), or ""."""
    tool: str = ""
    """Which tool asks (shell, execute_code, mcp:server/tool…): code is shown line by line."""


@dataclass(frozen=True)
class ApprovalResolved:
    request_id: str
    decision: str  # approved | declined | expired | unavailable


@dataclass(frozen=True)
class StateChanged:
    state: State


@dataclass(frozen=True)
class ErrorOccurred:
    """Something went wrong; `sentence` is what she says about it."""

    stage: str
    code: str
    sentence: str


@dataclass(frozen=True)
class ErrorCleared:
    """A problem told by ErrorOccurred (`stage`, `code`) is over (the sound server came back)."""

    stage: str
    code: str


@dataclass(frozen=True)
class TurnFinished:
    """A user turn ended; `emotion` is the tag her final reply began with."""

    text: str
    emotion: str
    interrupted: bool = False
    turn: int = 0
    """The turn it belongs to (0: none; stamped by the bus from the running turn)."""


@dataclass(frozen=True)
class TurnStarted:
    """A turn began and is now the current one: everything it says carries `turn`."""

    turn: int
    source: TurnSource
    text: str = ""


@dataclass(frozen=True)
class TurnInterrupted:
    """The one event that ends a turn early (Esc, barge-in, push-to-talk, "stop", a new
    utterance): its model stream, tool, queued speech and playback all stop on it."""

    turn: int
    reason: str


@dataclass(frozen=True)
class SpeakingChanged:
    """Her voice started or stopped coming out of the speaker (for `turn`, 0 when none)."""

    speaking: bool
    turn: int = 0
    queued: bool = False
    """She still has words of it to say (synthesizing or waiting to play)."""


@dataclass(frozen=True)
class ListeningChanged:
    """Her ears opened (a running microphone, not muted) or closed."""

    listening: bool


@dataclass(frozen=True)
class HoldingChanged:
    """She waits out a pause because the words so far are open ("Could you…", "in his book,"):
    `holding` from the check that holds her until the user goes on or the hold ends. Her face
    shows she is listening meanwhile, so the wait is not dead air."""

    holding: bool


@dataclass(frozen=True)
class AttentionChanged:
    """Whether she is being spoken to (voice.addressing.addressed.Attention): awake | dozing | attentive | off.
    `how` says what called her (name, wake word, push-to-talk, follow-up) when attentive."""

    attention: str
    how: str = ""


@dataclass(frozen=True)
class VoiceIgnored:
    """Words went unanswered because of whose voice said them (knowing voices on): `reason` is
    "other-voice" (another voice inside the follow-up window: it needs its own call),
    "stop-ignored" (a voice she doesn't know talked over her: she goes on), "card-stranger" (a
    spoken answer to a card in a voice she doesn't know: not taken) or "not-you" (Only me: not
    the user's voice). `sentence` says it for her log and a caption. Her face gives a brief
    "not you" look."""

    reason: str
    sentence: str = ""


@dataclass(frozen=True)
class NameHeard:
    """How her hearing writes one of her names (voice.addressing.learning): said in several
    voices, written `heard` (one spelling each, "" when not at all), `caught` of them calling her."""

    name: str
    heard: tuple[str, ...]
    caught: int
    reliable: bool
    """At least RELIABLE_SHARE of the voices call her: calling her by it wakes her."""


@dataclass(frozen=True)
class NamesHeard:
    """How her hearing writes her names is known (a personality loaded, or her names changed):
    one NameHeard each. Each replaces the one before: Settings warns of the names in the latest
    that are not reliably heard (and of none when all are)."""

    names: tuple[NameHeard, ...]


@dataclass(frozen=True)
class WorkChanged:
    """A background work-mode job started, finished or was cancelled."""

    status: str  # running | finished | cancelled | failed
    task: str
    result: str = ""


@dataclass(frozen=True)
class ReminderDue:
    """A reminder came due (she also says it with a Speak(SAY)); `missed` when it fell due
    while the app was closed. `due` is an ISO 8601 time with its offset."""

    reminder_id: str
    text: str
    due: str
    missed: bool = False


Event = (
    UserHeard | ReplyDelta | ReplyDone | Speak | ExpressionChanged | ToolStarted | ToolFinished
    | ApprovalNeeded | ApprovalResolved | StateChanged | ErrorOccurred | TurnFinished | WorkChanged
    | ReminderDue | TurnStarted | TurnInterrupted | SpeakingChanged | ListeningChanged
    | AttentionChanged | NamesHeard | HoldingChanged | VoiceIgnored
)
Subscriber = Callable[[Event], None]


_running_turn: contextvars.ContextVar[int] = contextvars.ContextVar("running_turn", default=0)


@contextlib.contextmanager
def turn_scope(turn: int) -> Iterator[None]:
    """Events emitted inside (and in tasks started inside) belong to `turn`."""
    token = _running_turn.set(turn)
    try:
        yield
    finally:
        _running_turn.reset(token)


def running_turn() -> int:
    """The turn whose code is running now (0 outside any turn)."""
    return _running_turn.get()


def _stamped(event: Event) -> Event:
    # The turn's own code (brain, tools, narration) never names its turn: the task it runs in does.
    if getattr(event, "turn", None) == 0:
        turn = _running_turn.get()
        if turn:
            return dataclasses.replace(event, turn=turn)
    return event


class EventBus:
    """Delivers each event to every subscriber, in order, on the emitting thread.

    An event with a `turn` field left at 0 is stamped with the running turn (turn_scope).
    A subscriber that raises is logged and does not stop the others or the core.
    """

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def emit(self, event: Event) -> None:
        event = _stamped(event)
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                log.exception("event subscriber failed on %r", event)
