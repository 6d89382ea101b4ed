"""Work mode: one background job per session, run by its own work-mode conversation."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from companion.brain.turn import Conversation, TurnResult
from companion.events import ErrorOccurred, EventBus, Speak, SpeechKind, WorkChanged
from companion.tools.context import Channel

log = logging.getLogger(__name__)


@dataclass
class WorkJob:
    task: str
    conversation: Conversation
    future: asyncio.Task[TurnResult]


class WorkManager:
    """Starts, cancels and reports the session's background job.

    The job's own events stay private (its narration would talk over the conversation);
    the outside hears `WorkChanged` at once and, at the next quiet moment, one spoken line
    with the result. `is_quiet` says whether she may speak now; the owner calls
    `deliver_notices()` when a quiet moment begins.
    """

    def __init__(
        self, *, make_conversation: Callable[[EventBus], Conversation], bus: EventBus,
        is_quiet: Callable[[], bool], remember: Callable[[str], None] | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        """`make_conversation(bus)` builds a fresh work-mode conversation; `remember(text)`
        adds the spoken result to the main conversation's history; `say(line)` speaks it (the
        runtime gives it a turn of its own; default: a Speak on the bus)."""
        self._say = say or (lambda line: bus.emit(Speak(SpeechKind.SAY, line)))
        self._make_conversation = make_conversation
        self._bus = bus
        self._is_quiet = is_quiet
        self._remember = remember
        self.job: WorkJob | None = None
        self.pending: list[str] = []
        """Result lines waiting for a quiet moment."""

    @property
    def running(self) -> bool:
        return self.job is not None and not self.job.future.done()

    def start(self, task: str) -> tuple[bool, str]:
        """Hand `task` to a background job; returns at once with (started, sentence)."""
        task = task.strip()
        if not task:
            return False, "Tell me what the background job should do."
        if self.running:
            assert self.job is not None
            return False, (f"I'm already working on '{self.job.task}' in the background. "
                           "Wait for it, or cancel it first.")
        conversation = self._make_conversation(EventBus())
        future = asyncio.ensure_future(conversation.run_turn(task, Channel.TEXT))
        self.job = WorkJob(task, conversation, future)
        future.add_done_callback(lambda done, job=self.job: self._finished(job, done))
        self._bus.emit(WorkChanged("running", task))
        return True, f"Started a background job: {task}. I'll tell you when it's done."

    def cancel(self) -> tuple[bool, str]:
        """Stop the running job; (stopped, sentence)."""
        if not self.running:
            return False, "There's no background job running."
        assert self.job is not None
        self.job.future.cancel()
        return True, f"I stopped the background job: {self.job.task}."

    def status(self) -> str:
        if self.running:
            assert self.job is not None
            return f"running: {self.job.task}"
        return "idle"

    def deliver_notices(self) -> None:
        """Say the waiting result lines, if she may speak now."""
        while self.pending and self._is_quiet():
            line = self.pending.pop(0)
            self._say(line)
            if self._remember is not None:
                self._remember(line)

    async def close(self) -> None:
        if self.running:
            assert self.job is not None
            self.job.future.cancel()
            await asyncio.gather(self.job.future, return_exceptions=True)

    def _finished(self, job: WorkJob, future: asyncio.Task[TurnResult]) -> None:
        release = getattr(job.conversation.model, "release", None)
        if release is not None:
            release()  # the brain client it was pinned to may close now
        if future.cancelled():
            self._bus.emit(WorkChanged("cancelled", job.task))
            return
        error = future.exception()
        if error is not None:
            log.error("background job crashed", exc_info=error)
            line = f"My background job on '{job.task}' stopped unexpectedly ({error})."
            self._bus.emit(ErrorOccurred("work", "job_crashed", line))
            self._notify(job, "failed", line)
            return
        result = future.result()
        if result.error is not None:
            self._notify(job, "failed", f"My background job on '{job.task}' stopped: {result.error.sentence}")
        else:
            summary = result.text or "it finished, but there was nothing to report"
            self._notify(job, "finished", f"My background job is done ({job.task}): {summary}", result.text)

    def _notify(self, job: WorkJob, status: str, line: str, result: str = "") -> None:
        self._bus.emit(WorkChanged(status, job.task, result or line))
        self.pending.append(line)
        self.deliver_notices()
