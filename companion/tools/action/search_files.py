"""search_files — find text across workspace files, in-process (a read tool starts no programs).

At most 80 matching lines are returned and a cut list says so ("showing 80 of 213 matches").
The search runs in a worker thread, bounded by the call's time budget, MAX_DEPTH levels and
MAX_ENTRIES names, says which bound cut it, and stops at once when the turn is cancelled.
Her own folders are never searched, even when the workspace contains them.
"""

from __future__ import annotations

import asyncio
import io
import os
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import BinaryIO

from companion.safety.jail.beneath import WalkStats, open_beneath, stat_beneath, walk_files_beneath
from companion.safety.jail.jail import JailedPath, JailError, shown_path
from companion.tools.action._files import file_error_sentence, jail, own_paths

SCHEMA = {
    "type": "function",
    "name": "search_files",
    "description": (
        "Search the text files in the workspace (or one folder of it) for a piece of text, "
        "ignoring case. Returns file:line matches."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The text to look for (not a pattern)."},
            "path": {
                "type": "string",
                "description": "Folder or file to search, relative to the workspace (default: all).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}
TOOLSET = "file"
RISK = "read"

ANNOUNCE = "Let me search through the files."
HEARTBEAT = ["Still looking everywhere...", "Almost done scanning..."]
COMPLETE = "Here's what I found."
FAIL = "I couldn't search the files."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}

MAX_MATCHES = 80
MAX_LINE_CHARS = 300
MAX_QUERY_CHARS = 1_000
MAX_FILE_BYTES = 10 * 1024 * 1024
BINARY_SNIFF_BYTES = 8_192
MAX_DEPTH = 64
"""Folder levels below the searched folder; deeper ones are left out and counted."""
MAX_ENTRIES = 200_000
"""Names looked at in one search (files and folders); the rest is left out."""
_clock = time.monotonic  # the walk's deadline clock (a test may swap it)


@dataclass
class _Found:
    """Matches kept so far and how many there were in all; survives a stopped search."""

    shown: list[tuple[Path, int, str]] = field(default_factory=list)
    total: int = 0
    finished: bool = False
    unreadable: bool = False
    walk: WalkStats = field(default_factory=WalkStats)

    def add(self, path: Path, line_number: int, text: str) -> None:
        self.total += 1
        if len(self.shown) < MAX_MATCHES:
            self.shown.append((path, line_number, text))


async def execute(args: dict, ctx) -> str:
    args = args if isinstance(args, dict) else {}
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        return ctx.fail("Tell me what text to search for.")
    if len(query) > MAX_QUERY_CHARS or "\n" in query or "\x00" in query:
        return ctx.fail("Search for one line of text, under 1,000 characters.")
    where = args.get("path") or "."
    try:
        target = jail(ctx, where, writing=False)
    except JailError as exc:
        return ctx.fail(exc.sentence)
    name = shown_path(ctx.workspace, target.path)
    try:
        there = await asyncio.to_thread(stat_beneath, target.root, target.relative)
    except OSError as exc:
        return ctx.fail(file_error_sentence(exc, name, "search"))
    if there is None:
        return ctx.fail(f"There's nothing called {name} in my workspace.")
    budget = max(float(ctx.budget_s), 0.5)
    skip = _own_inside(target, own_paths(ctx))
    found = await _search_with_walk(query, target, budget, ctx.cancel, skip)
    return _report(found, query, ctx, budget)


def _own_inside(target: JailedPath, own: tuple[Path, ...]) -> frozenset[PurePath]:
    """Her own folders that lie inside the workspace, relative to it: the walk never enters them."""
    inside = set()
    for folder in own:
        real = Path(os.path.realpath(folder))
        if real != target.root and real.is_relative_to(target.root):
            inside.add(PurePath(real.relative_to(target.root)))
    return frozenset(inside)


def _report(found: _Found, query: str, ctx, budget: float) -> str:
    if ctx.cancelled:
        return "I stopped the search."
    lines = [
        f"{shown_path(ctx.workspace, path)}:{number}: {_clip(text)}"
        for path, number, text in found.shown
    ]
    note = " (some files couldn't be read)" if found.unreadable else ""
    left_out = _left_out(found.walk)
    if found.finished and left_out:
        if found.total == 0:
            return f"No matches for {query!r}{note}, but the search was not complete: {left_out}."
        head = (f"Showing {len(lines)} of at least {found.total} matches for {query!r}{note}; "
                f"the search was not complete ({left_out}):")
    elif not found.finished:
        head = (
            f"I stopped searching after {budget:g} s; showing {len(lines)} of at least "
            f"{found.total} matches for {query!r} (the search was not finished){note}:"
        )
    elif found.total == 0:
        return f"No matches for {query!r}{note}."
    elif found.total > len(lines):
        head = f"Showing {len(lines)} of {found.total} matches for {query!r}{note}:"
    else:
        head = f"Found {found.total} match{'es' if found.total != 1 else ''} for {query!r}{note}:"
    return "\n".join([head, *lines])


def _left_out(walk: WalkStats) -> str:
    """What the walk's bounds left out, in words; empty when it saw everything."""
    parts = []
    if walk.too_many:
        parts.append(f"I stopped after looking at {walk.entries:,} files and folders")
    if walk.too_deep:
        parts.append(f"the tree is too deep: {walk.too_deep:,} folder{'s' if walk.too_deep != 1 else ''} "
                     f"more than {MAX_DEPTH} levels down {'were' if walk.too_deep != 1 else 'was'} left out")
    return "; ".join(parts)


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


async def _search_with_walk(
    query: str, target: JailedPath, budget: float, cancel: asyncio.Event, skip: frozenset[PurePath]
) -> _Found:
    found = _Found()
    stop = threading.Event()
    deadline = _clock() + budget
    walker = asyncio.ensure_future(asyncio.to_thread(_walk, query, target, found, stop, deadline, skip))
    cancelled = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({walker, cancelled}, timeout=budget, return_when=asyncio.FIRST_COMPLETED)
        stop.set()
        # The thread checks `stop` often; wait for it so the counts are final when reported.
        await asyncio.wait({walker})
    finally:
        stop.set()
        _discard(cancelled)
    walker.result()
    return found


def _discard(waiter: asyncio.Future) -> None:
    """Drop the cancel waiter, reading its outcome so asyncio never warns about it."""
    waiter.cancel()
    if waiter.done() and not waiter.cancelled():
        waiter.exception()


def _walk(query: str, target: JailedPath, found: _Found, stop: threading.Event, deadline: float,
          skip: frozenset[PurePath]) -> None:
    needle = query.lower()

    def should_stop() -> bool:
        return stop.is_set() or _clock() > deadline

    for relative, f in _text_files(target, found, should_stop, skip):
        path = target.root / relative
        with f:
            try:
                for number, line in enumerate(io.TextIOWrapper(f, encoding="utf-8", errors="replace"), 1):
                    if needle in line.lower():
                        found.add(path, number, line)
                    if number % 10_000 == 0 and should_stop():
                        return
            except OSError:
                found.unreadable = True
        if should_stop():
            return
    found.finished = True


def _text_files(target: JailedPath, found: _Found, should_stop,
                skip: frozenset[PurePath]) -> Iterator[tuple[PurePath, BinaryIO]]:
    """Open files to search, in path order: hidden ones, links, big and binary files are skipped.

    Each is opened beneath the workspace without following links, so a folder swapped for a
    link mid-search leads nowhere.
    """
    try:
        info = stat_beneath(target.root, target.relative)
    except OSError:
        found.unreadable = True
        return
    if info is not None and stat.S_ISREG(info.st_mode):
        candidates: Iterator[PurePath] = iter([target.relative])
    else:
        candidates = walk_files_beneath(target.root, target.relative, stop=should_stop, skip=skip,
                                        max_depth=MAX_DEPTH, max_entries=MAX_ENTRIES, stats=found.walk)
    for relative in candidates:
        try:
            fd = open_beneath(target.root, relative)
        except OSError:
            found.unreadable = True
            continue
        f = os.fdopen(fd, "rb")
        try:
            details = os.fstat(fd)
            if not stat.S_ISREG(details.st_mode) or details.st_size > MAX_FILE_BYTES:
                f.close()
                continue
            if b"\x00" in f.read(BINARY_SNIFF_BYTES):
                f.close()
                continue
            f.seek(0)
        except OSError:
            f.close()
            found.unreadable = True
            continue
        yield relative, f
