"""`companion chat`: a terminal conversation (no Qt, no audio) printing a transcript of what she says."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from companion.config import RunConfig
    from companion.events import Event

PROMPT = "you> "
REPROMPT_AFTER_S = 0.3
"""Quiet after output between turns before the prompt is printed again (a burst prints it once)."""
SAID_STAGES = ("brain", "work")
"""Faults whose sentence she also says (printed as [say]): not printed twice as [error]."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", metavar="TEXT", help="say one thing, print her answer, and exit")
    parser.add_argument("--wait-work", action="store_true",
                        help="before exiting, wait for a background job to finish and hear its result")


def run(args: argparse.Namespace, config: RunConfig) -> int:
    try:
        return asyncio.run(_chat(args, config))
    except KeyboardInterrupt:
        print("\nBye!", flush=True)
        return 130


class Transcript:
    """Prints every spoken line with its kind, and face changes, as they happen."""

    def __init__(self, out: TextIO, *, verbose: bool = False, errors: bool = False) -> None:
        self.out = out
        self.verbose = verbose
        self.errors = errors
        """Print faults as `[error] …` lines (chat; listen prints them to stderr itself)."""
        self.on_print: Callable[[], None] | None = None
        """Told before each line, so a pending question knows its prompt is scrolling away."""

    def __call__(self, event: Event) -> None:
        from companion.events import (
            ErrorOccurred,
            ExpressionChanged,
            ReplyDone,
            Speak,
            ToolFinished,
            WorkChanged,
        )

        line = None
        if isinstance(event, Speak):
            line = f"[{event.kind}] {event.text}"
        elif isinstance(event, ReplyDone):
            line = f"[say] {event.text}"
        elif isinstance(event, ExpressionChanged):
            line = f"[face] {event.name} ({event.reason})" if event.reason else f"[face] {event.name}"
        elif isinstance(event, WorkChanged):
            line = f"[work] {event.status}: {event.task}"
        elif isinstance(event, ErrorOccurred) and self.errors and event.stage not in SAID_STAGES:
            # A brain error is also said as her reply, a crashed job as her notice ([say]);
            # every other fault is one line here.
            line = f"[error] {event.sentence}"
        elif isinstance(event, ToolFinished) and self.verbose:
            line = f"[tool] {event.name}: {event.outcome}" + (f" ({event.detail})" if event.detail else "")
        if line is not None:
            if self.on_print is not None:
                self.on_print()
            from companion.safety.consent.visible import terminal_text

            print(terminal_text(line), file=self.out, flush=True)  # model text: no raw escapes


async def _chat(args: argparse.Namespace, config: RunConfig) -> int:
    from companion.events import EventBus
    from companion.runtime import Companion
    from companion.tools.context import Channel

    bus = EventBus()
    transcript = Transcript(sys.stdout, verbose=bool(getattr(args, "verbose", False)), errors=True)
    bus.subscribe(transcript)
    companion = Companion(config, bus)
    try:
        await companion.start()
    except Exception as exc:  # e.g. an action tool that fails to import: say it, no traceback
        print(f"companion: I couldn't start: {exc}", file=sys.stderr, flush=True)
        return 1
    from companion.safety.consent.terminal import TerminalApprover

    # Approvals are asked here on the terminal (y / n / a); with no terminal they are unavailable.
    companion.gate.approver = TerminalApprover()
    try:
        if args.once is not None:
            result = await companion.ask(args.once, Channel.TEXT)
            if args.wait_work:
                await _wait_for_work(companion)
            return 1 if result.error is not None else 0
        failed = await _interactive(companion, transcript)
        if args.wait_work:
            await _wait_for_work(companion)
        return 1 if failed else 0
    finally:
        await companion.close()


async def _interactive(companion, transcript: Transcript) -> bool:
    """Read lines until the end of input; True when any turn ended in a brain error (the exit
    code then says so to a script driving the chat).

    One reader owns the terminal for the whole session. Every line goes first to the approver:
    while any question is pending (a background job's, or this turn's) the line answers the
    question shown and never reaches the brain as a message."""
    from companion.tools.context import Channel

    failed = False
    interactive = sys.stdin.isatty()
    approver = getattr(companion.gate, "approver", None)
    answers = approver if hasattr(approver, "offer") else None
    if answers is not None:
        answers.reading_elsewhere = True
    lines = TerminalLines(sys.stdin)
    loop = asyncio.get_running_loop()
    state: dict = {"idle": True, "at_prompt": False, "again": None}

    def prompt() -> None:
        # A pending question takes the prompt's place (re-printed if her reply covered it).
        state["at_prompt"] = False
        if interactive and not (answers is not None and answers.show_again()):
            print(PROMPT, end="", flush=True)
            state["at_prompt"] = True

    def printed() -> None:
        """Before the transcript prints a line."""
        if answers is not None:
            answers.written_over()
        if state["at_prompt"]:
            print(flush=True)  # her line starts on a line of its own, not after `you> `
            state["at_prompt"] = False
        if state["idle"] and interactive:
            # Output between turns (a background job, a reminder): once it settles, the
            # prompt (or the pending question) is the last line again.
            if state["again"] is not None:
                state["again"].cancel()
            state["again"] = loop.call_later(REPROMPT_AFTER_S, prompt)

    transcript.on_print = printed

    def route(line: str | None) -> bool:
        if answers is None or not answers.offer(line):
            return False
        if state["idle"] and not answers.waiting:
            prompt()  # the last question was answered while chat sat at its prompt
        return True

    lines.start(loop, route)
    try:
        prompt()
        while True:
            line = await lines.next()
            if line is None:  # end of input
                break
            text = line.strip()
            if text in ("/quit", "/exit"):
                break
            if text:
                state["idle"] = False
                if state["again"] is not None:
                    state["again"].cancel()
                try:
                    result = await companion.ask(text, Channel.TEXT)
                finally:
                    state["idle"] = True
                failed = failed or result.error is not None
            prompt()
    finally:
        transcript.on_print = None
        if state["again"] is not None:
            state["again"].cancel()
    return failed


class TerminalLines:
    """The one reader of standard input: a daemon thread reads lines and hands each to `route`
    on the loop; lines it does not take (not an answer to a question) queue as messages.

    A thread rather than the loop's reader because stdin may be a regular file, which epoll
    refuses; a daemon thread, because a read blocked on a terminal cannot be interrupted and
    must not hold up the exit."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._messages: asyncio.Queue[str | None] = asyncio.Queue()

    def start(self, loop: asyncio.AbstractEventLoop, route: Callable[[str | None], bool]) -> None:
        def deliver(line: str | None) -> None:
            if not route(line) or line is None:
                self._messages.put_nowait(line)

        def read() -> None:
            while True:
                try:
                    line = self._stream.readline()
                except (OSError, ValueError):
                    line = ""
                with contextlib.suppress(RuntimeError):  # the loop closed: chat is over
                    loop.call_soon_threadsafe(deliver, line or None)
                if not line:
                    return

        threading.Thread(target=read, name="chat-stdin", daemon=True).start()

    async def next(self) -> str | None:
        """The next message line; None at the end of input."""
        return await self._messages.get()


async def _wait_for_work(companion) -> None:
    work = companion.work
    if work is not None and work.running and work.job is not None:
        await asyncio.gather(work.job.future, return_exceptions=True)
        # The done-callback runs on the next loop pass; give it that pass, then deliver.
        await asyncio.sleep(0)
        work.deliver_notices()
