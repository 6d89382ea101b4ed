"""Asking for approval on the terminal (companion chat): y / n / a, expiring like a card.

Questions queue: the oldest is shown, the others wait visibly ("1 more question waiting"),
and every line typed while one is pending answers the one shown, never reaching the brain.
With no terminal to ask (stdin is a pipe or a file), every request is `unavailable`: a
scripted run never mistakes its input for consent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import TextIO

from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.consent.visible import shown_question, visible

__all__ = ["TerminalApprover"]

_YES = {"y", "yes"}
_NO = {"n", "no"}
_ALWAYS = {"a", "always"}


@dataclass(eq=False)
class _Question:
    request: ApprovalRequest
    answer: asyncio.Future[Answer]
    deadline: float
    """On the loop's clock."""
    shown: bool = field(default=False)


class TerminalApprover:
    """Puts questions on `output` and takes the answers typed on the terminal at `input_fd`.

    One terminal has one reader. When the chat loop reads the terminal itself, it sets
    `reading_elsewhere` and hands every line to `offer()` first: while a question is pending
    the line answers it and is not a message. Otherwise (`companion chat --once`) the approver
    reads the terminal itself, only while a question is pending, so nothing lingers to eat the
    user's next message.
    """

    queues_questions = True
    """The gate hands over every question at once; this shows one and counts the rest."""

    def __init__(self, input_fd: int | None = None, output: TextIO | None = None) -> None:
        if input_fd is None:
            try:
                input_fd = sys.stdin.fileno()
            except (AttributeError, ValueError, OSError):  # no real stdin (closed, or replaced)
                input_fd = -1
        self.input_fd = input_fd
        self.output = output or sys.stdout
        self.reading_elsewhere = False
        self._queue: deque[_Question] = deque()
        self._reading = False
        self._buffer = bytearray()
        self._written_over = False
        """Something else was printed after the question's prompt (e.g. her streamed reply)."""

    def available(self) -> bool:
        try:
            return os.isatty(self.input_fd)
        except OSError:
            return False

    @property
    def waiting(self) -> int:
        """How many questions are pending (the one shown and those queued behind it)."""
        return len(self._queue)

    async def ask(self, request: ApprovalRequest) -> Answer:
        if not self.available():
            self._say(f"\n[approval] I'd need your OK to run: {visible(request.command)}\n"
                      "[approval] There's no terminal to ask on, so I won't run it.\n")
            return Answer(Decision.UNAVAILABLE)
        loop = asyncio.get_running_loop()
        question = _Question(request, loop.create_future(), loop.time() + request.timeout_s)
        self._queue.append(question)
        if len(self._queue) == 1:
            self._show(question)
        else:
            more = len(self._queue) - 1
            self._say(f"\n[approval] Another question is waiting ({more} more after the one above).\n")
            self._prompt(self._queue[0])
        self._start_reading()
        try:
            return await asyncio.wait_for(asyncio.shield(question.answer),
                                          timeout=max(0.0, question.deadline - loop.time()))
        except TimeoutError:
            self._say(f"\n[approval] No answer in time, so I didn't run: {visible(request.command)}\n")
            return Answer(Decision.EXPIRED)
        finally:
            self._withdraw(question)

    def offer(self, line: str | None) -> bool:
        """A line typed on the terminal: True when it went to the question shown (so it is not
        a message). None means the terminal closed: every pending question is unavailable."""
        if not self._queue:
            return False
        if line is None:
            for question in list(self._queue):
                if not question.answer.done():
                    question.answer.set_result(Answer(Decision.UNAVAILABLE))
            return True
        question = self._queue[0]
        word = line.strip().lower()
        if word in _YES:
            self._decide(question, Answer(Decision.APPROVED))
        elif word in _NO:
            self._decide(question, Answer(Decision.DECLINED))
        elif word in _ALWAYS and question.request.saveable:
            self._decide(question, Answer(Decision.APPROVED, always=True))
        elif word in _ALWAYS:
            self._say("[approval] I can't remember this one; it always asks. Answer y or n.\n")
            self._prompt(question)
        else:
            self._say("[approval] Please answer y, n" + (" or a.\n" if question.request.saveable else ".\n"))
            self._prompt(question)
        return True

    def written_over(self) -> None:
        """Something else is about to be printed (her reply, a notice): it starts on a line of
        its own, and the question's prompt has scrolled away, so `show_again()` prints it again."""
        if self._queue and not self._written_over:
            self._say("\n")
            self._written_over = True

    def show_again(self) -> bool:
        """Re-print the question shown if other output has covered it; True when one is pending
        (the caller then prints no prompt of its own)."""
        if not self._queue:
            return False
        if self._written_over:
            self._show(self._queue[0])
        return True

    # --- internals --------------------------------------------------------------------
    def _show(self, question: _Question) -> None:
        request = question.request
        question.shown = True
        self._say(shown_question(request))
        self._prompt(question)

    def _prompt(self, question: _Question) -> None:
        request = question.request
        choices = "[y]es / [n]o / [a]lways" if request.saveable else "[y]es / [n]o (this one always asks)"
        left = max(0, round(question.deadline - asyncio.get_running_loop().time()))
        more = len(self._queue) - 1
        queued = f" ({more} more question{'s' if more != 1 else ''} waiting)" if more > 0 else ""
        self._say(f"[approval] Allow? {choices} — expires in {left} s{queued}: ")
        self._written_over = False

    def _decide(self, question: _Question, answer: Answer) -> None:
        if not question.answer.done():
            question.answer.set_result(answer)
        self._withdraw(question)

    def _withdraw(self, question: _Question) -> None:
        """The question ended (answered, expired, or its asker went away): the next is shown."""
        if question not in self._queue:
            return
        was_shown = self._queue[0] is question
        self._queue.remove(question)
        if not self._queue:
            self._stop_reading()
        elif was_shown:
            self._show(self._queue[0])

    def _start_reading(self) -> None:
        if self.reading_elsewhere or self._reading:
            return
        asyncio.get_running_loop().add_reader(self.input_fd, self._readable)
        self._reading = True

    def _stop_reading(self) -> None:
        if not self._reading:
            return
        self._reading = False
        with contextlib.suppress(ValueError, OSError, RuntimeError):
            asyncio.get_running_loop().remove_reader(self.input_fd)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.input_fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            self._stop_reading()
            self.offer(None)
            return
        self._buffer.extend(chunk)
        while b"\n" in self._buffer and self._queue:
            line, _, rest = bytes(self._buffer).partition(b"\n")
            self._buffer[:] = rest
            self.offer(line.decode("utf-8", errors="replace"))
        if not self._queue:
            self._buffer.clear()  # what was typed after the last answer belongs to no question

    def _say(self, text: str) -> None:
        self.output.write(text)
        self.output.flush()
