"""The one door between the core and Qt: core events in, Qt signals out on the Qt thread.

The core emits on whatever thread it runs (the asyncio loop, an audio callback, a worker);
`EventBridge.deliver` only queues the event, and the bridge re-emits it as a typed signal
from the Qt thread. Nothing else in the UI touches another thread's objects.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal, Slot

from companion import events as ev


class EventBridge(QObject):
    """Subscribe it to an EventBus; connect widgets to its signals."""

    event = Signal(object)
    """Every event, after the typed signal for it."""
    heard = Signal(str, bool)  # text, spoken
    heard_aside = Signal(str)
    """Words said over her reply that asked nothing of her ("Mm-hmm."): a line of her running turn."""
    reply_delta = Signal(str)
    reply_done = Signal(str)
    speak = Signal(str, str, str)  # kind, text, tool ("" when none)
    expression = Signal(str, str)  # name, reason
    tool_started = Signal(str, str)  # name, call_id
    tool_finished = Signal(str, str, str)  # name, outcome, detail
    approval_needed = Signal(object)  # events.ApprovalNeeded
    approval_resolved = Signal(str, str)  # request_id, decision
    state = Signal(str)
    error = Signal(str, str, str)  # stage, code, sentence
    error_cleared = Signal(str, str)  # stage, code
    turn_finished = Signal(str, str, bool)  # text, emotion, interrupted
    work_changed = Signal(str, str, str)  # status, task, result
    attention = Signal(str, str)  # awake | dozing | attentive | off, what called her
    names_heard = Signal(object)  # events.NamesHeard
    speech_level = Signal(float)
    """Her output audio level 0..1 (lip sync)."""
    mic_level = Signal(float)
    download_progress = Signal(str, int, int)
    """A model download: file name, bytes so far, total bytes (0 when unknown)."""

    _queued_event = Signal(object)
    _queued_speech_level = Signal(float)
    _queued_mic_level = Signal(float)
    _queued_progress = Signal(str, int, int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # Queued even from the Qt thread itself: one order for every event, and no widget
        # code running in the middle of a core call.
        queued = Qt.ConnectionType.QueuedConnection
        self._queued_event.connect(self._dispatch, queued)
        self._queued_speech_level.connect(self.speech_level, queued)
        self._queued_mic_level.connect(self.mic_level, queued)
        self._queued_progress.connect(self.download_progress, queued)
        self._unsubscribe: Callable[[], None] | None = None
        self._replying_turn = 0  # the turn whose reply has streamed, until it finishes

    # --- the core side (any thread) -------------------------------------------------------
    def deliver(self, event: ev.Event) -> None:
        """An EventBus subscriber: safe to call from any thread."""
        self._queued_event.emit(event)

    def deliver_speech_level(self, level: float) -> None:
        """A level listener for the audio sink: safe to call from any thread."""
        self._queued_speech_level.emit(float(level))

    def deliver_mic_level(self, level: float) -> None:
        self._queued_mic_level.emit(float(level))

    def deliver_progress(self, name: str, done: int, total: int | None) -> None:
        """A model download's progress callback: safe to call from any thread."""
        self._queued_progress.emit(name, int(done), int(total or 0))

    def attach(self, bus: ev.EventBus) -> None:
        self.detach()
        self._unsubscribe = bus.subscribe(self.deliver)

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # --- the Qt side ----------------------------------------------------------------------
    @Slot(object)
    def _dispatch(self, event: ev.Event) -> None:
        match event:
            case ev.UserHeard(text=text, turn=turn) if turn and turn == self._replying_turn:
                self.heard_aside.emit(text)
            case ev.UserHeard(text=text, spoken=spoken):
                self.heard.emit(text, spoken)
            case ev.ReplyDelta(text=text, turn=turn):
                self._replying_turn = turn
                self.reply_delta.emit(text)
            case ev.ReplyDone(text=text):
                self.reply_done.emit(text)
            case ev.Speak(kind=kind, text=text, tool=tool):
                self.speak.emit(str(kind), text, tool or "")
            case ev.ExpressionChanged(name=name, reason=reason):
                self.expression.emit(name, reason)
            case ev.ToolStarted(name=name, call_id=call_id):
                self.tool_started.emit(name, call_id)
            case ev.ToolFinished(name=name, outcome=outcome, detail=detail):
                self.tool_finished.emit(name, str(outcome), detail)
            case ev.ApprovalNeeded():
                self.approval_needed.emit(event)
            case ev.ApprovalResolved(request_id=request_id, decision=decision):
                self.approval_resolved.emit(request_id, decision)
            case ev.StateChanged(state=state):
                self.state.emit(str(state))
            case ev.ErrorOccurred(stage=stage, code=code, sentence=sentence):
                self.error.emit(str(stage), code, sentence)
            case ev.ErrorCleared(stage=stage, code=code):
                self.error_cleared.emit(str(stage), code)
            case ev.TurnFinished(text=text, emotion=emotion, interrupted=interrupted):
                self._replying_turn = 0
                self.turn_finished.emit(text, emotion, interrupted)
            case ev.WorkChanged(status=status, task=task, result=result):
                self.work_changed.emit(status, task, result)
            case ev.AttentionChanged(attention=attention, how=how):
                self.attention.emit(attention, how)
            case ev.NamesHeard():
                self.names_heard.emit(event)
        self.event.emit(event)
