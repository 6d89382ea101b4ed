"""`companion chat`: a terminal conversation (no Qt, no audio) printing a transcript of what she says."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from companion.config import RunConfig
    from companion.events import Event

PROMPT = "you> "


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

    def __init__(self, out: TextIO, *, verbose: bool = False) -> None:
        self.out = out
        self.verbose = verbose

    def __call__(self, event: Event) -> None:
        from companion.events import (
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
        elif isinstance(event, ToolFinished) and self.verbose:
            line = f"[tool] {event.name}: {event.outcome}" + (f" ({event.detail})" if event.detail else "")
        if line is not None:
            print(line, file=self.out, flush=True)


async def _chat(args: argparse.Namespace, config: RunConfig) -> int:
    from companion.events import EventBus
    from companion.runtime import Companion
    from companion.tools.context import Channel

    bus = EventBus()
    bus.subscribe(Transcript(sys.stdout, verbose=bool(getattr(args, "verbose", False))))
    companion = Companion(config, bus)
    try:
        await companion.start()
    except Exception as exc:  # e.g. an action tool that fails to import: say it, no traceback
        print(f"companion: I couldn't start: {exc}", file=sys.stderr, flush=True)
        return 1
    from companion.safety.terminal import TerminalApprover

    # Approvals are asked here on the terminal (y / n / a); with no terminal they are unavailable.
    companion.gate.approver = TerminalApprover()
    try:
        if args.once is not None:
            result = await companion.ask(args.once, Channel.TEXT)
            if args.wait_work:
                await _wait_for_work(companion)
            return 1 if result.error is not None else 0
        failed = await _interactive(companion)
        if args.wait_work:
            await _wait_for_work(companion)
        return 1 if failed else 0
    finally:
        await companion.close()


async def _interactive(companion) -> bool:
    """Read lines until the end of input; True when any turn ended in a brain error (the exit
    code then says so to a script driving the chat)."""
    from companion.tools.context import Channel

    failed = False
    interactive = sys.stdin.isatty()
    loop = asyncio.get_running_loop()
    while True:
        if interactive:
            print(PROMPT, end="", flush=True)
        # While chat waits here, a background job's approval question reads its answer from us.
        approver = getattr(companion.gate, "approver", None)
        shared = hasattr(approver, "offer")
        if shared:
            approver.reading_elsewhere = True
        try:
            line = await loop.run_in_executor(None, sys.stdin.readline)
        finally:
            if shared:
                approver.reading_elsewhere = False
        if line and shared and approver.offer(line):
            continue
        if not line:  # end of input
            break
        text = line.strip()
        if text in ("/quit", "/exit"):
            break
        if text:
            result = await companion.ask(text, Channel.TEXT)
            failed = failed or result.error is not None
    return failed


async def _wait_for_work(companion) -> None:
    work = companion.work
    if work is not None and work.running and work.job is not None:
        await asyncio.gather(work.job.future, return_exceptions=True)
        # The done-callback runs on the next loop pass; give it that pass, then deliver.
        await asyncio.sleep(0)
        work.deliver_notices()
