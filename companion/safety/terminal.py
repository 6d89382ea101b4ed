"""Asking for approval on the terminal (companion chat): y / n / a, expiring like a card.

With no terminal to ask (stdin is a pipe or a file), every request is `unavailable`: a
scripted run never mistakes its input for consent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import TextIO

from companion.safety.approval import Answer, ApprovalRequest, Decision

__all__ = ["TerminalApprover"]

_YES = {"y", "yes"}
_NO = {"n", "no"}
_ALWAYS = {"a", "always"}


class TerminalApprover:
    """Puts the question on `output` and reads the answer from the terminal at `input_fd`.

    When the chat loop is itself waiting for the user's next line (a background job asks while
    chat is idle), it sets `reading_elsewhere` and hands each line it reads to `offer()` first,
    so one terminal has one reader at a time.
    """

    def __init__(self, input_fd: int | None = None, output: TextIO | None = None) -> None:
        if input_fd is None:
            try:
                input_fd = sys.stdin.fileno()
            except (AttributeError, ValueError, OSError):  # no real stdin (closed, or replaced)
                input_fd = -1
        self.input_fd = input_fd
        self.output = output or sys.stdout
        self.reading_elsewhere = False
        self._offered: asyncio.Future[str | None] | None = None

    def available(self) -> bool:
        try:
            return os.isatty(self.input_fd)
        except OSError:
            return False

    async def ask(self, request: ApprovalRequest) -> Answer:
        if not self.available():
            self._say(f"\n[approval] I'd need your OK to run: {request.command}\n"
                      "[approval] There's no terminal to ask on, so I won't run it.\n")
            return Answer(Decision.UNAVAILABLE)
        choices = "[y]es / [n]o / [a]lways" if request.saveable else "[y]es / [n]o (this one always asks)"
        self._say(f"\n[approval] She wants to run ({request.tool}):\n    {request.command}\n"
                  f"[approval] {request.reason}\n")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + request.timeout_s
        while True:
            left = deadline - loop.time()
            self._say(f"[approval] Allow? {choices} — expires in {max(0, round(left))} s: ")
            try:
                line = await asyncio.wait_for(self._read_line(), timeout=max(0.0, left))
            except TimeoutError:
                self._say("\n[approval] No answer in time, so I didn't run it.\n")
                return Answer(Decision.EXPIRED)
            if line is None:  # the terminal closed
                return Answer(Decision.UNAVAILABLE)
            word = line.strip().lower()
            if word in _YES:
                return Answer(Decision.APPROVED)
            if word in _NO:
                return Answer(Decision.DECLINED)
            if word in _ALWAYS:
                if request.saveable:
                    return Answer(Decision.APPROVED, always=True)
                self._say("[approval] I can't remember this one; it always asks. Answer y or n.\n")
                continue
            self._say("[approval] Please answer y, n" + (" or a.\n" if request.saveable else ".\n"))

    def offer(self, line: str) -> bool:
        """A line the chat loop read: True when it answered a pending question (so it is not a message)."""
        if self._offered is None or self._offered.done():
            return False
        self._offered.set_result(line)
        return True

    async def _read_line(self) -> str | None:
        """One line from the terminal; the reader is removed on return or cancel, so nothing
        lingers to eat the user's next message."""
        loop = asyncio.get_running_loop()
        if self.reading_elsewhere:
            self._offered = loop.create_future()
            try:
                return await self._offered
            finally:
                self._offered = None
        done: asyncio.Future[str | None] = loop.create_future()
        buffer = bytearray()

        def readable() -> None:
            try:
                chunk = os.read(self.input_fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                if not done.done():
                    done.set_result(None)
                return
            buffer.extend(chunk)
            if b"\n" in buffer and not done.done():
                done.set_result(buffer.split(b"\n", 1)[0].decode("utf-8", errors="replace"))

        loop.add_reader(self.input_fd, readable)
        try:
            return await done
        finally:
            with contextlib.suppress(ValueError, OSError):
                loop.remove_reader(self.input_fd)

    def _say(self, text: str) -> None:
        self.output.write(text)
        self.output.flush()
