"""read_file — read a text file in the workspace, in capped slices that say when they were cut."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from companion.safety.jail.beneath import open_beneath, scan_beneath
from companion.safety.jail.jail import JailedPath, JailError, shown_path
from companion.tools.action._files import file_error_sentence, jail

SCHEMA = {
    "type": "function",
    "name": "read_file",
    "description": (
        "Read a text file in the workspace. Long files come in slices: pass start_line to "
        "read further. A folder path lists what is in it."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace."},
            "start_line": {"type": "integer", "description": "First line to read (from 1)."},
            "max_lines": {"type": "integer", "description": "How many lines (at most 400)."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
}
TOOLSET = "file"
RISK = "read"

ANNOUNCE = "Let me open that file."
HEARTBEAT = ["Still reading...", "It's a long one, still reading..."]
COMPLETE = "Here's what it says."
FAIL = "I couldn't read that file."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}

MAX_LINES = 400
MAX_CHARS = 40_000
MAX_LINE_CHARS = 2_000
MAX_LISTED = 100
BINARY_SNIFF_BYTES = 8_192
MAX_COUNT_BYTES = 256 * 1024 * 1024
"""How far into a file she counts its lines; past it the total is "more than" (a 10 GB log
would otherwise keep a worker thread reading long after the turn moved on)."""


async def execute(args: dict, ctx) -> str:
    args = args if isinstance(args, dict) else {}
    try:
        where = jail(ctx, args.get("path"), writing=False)
    except JailError as exc:
        return ctx.fail(exc.sentence)
    start = _int(args.get("start_line"), 1)
    limit = _int(args.get("max_lines"), MAX_LINES)
    if start is None or limit is None or start < 1 or limit < 1:
        return ctx.fail("start_line and max_lines must be whole numbers from 1 up.")
    name = shown_path(ctx.workspace, where.path)
    try:
        return await asyncio.to_thread(_read, where, name, start, min(limit, MAX_LINES), ctx)
    except OSError as exc:
        return ctx.fail(file_error_sentence(exc, name, "read"))


def _read(where: JailedPath, name: str, start: int, limit: int, ctx) -> str:
    # Opened without following links (and never blocking on a pipe); the type comes from the fd.
    fd = open_beneath(where.root, where.relative)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            return _list_folder(where, name)
        return ctx.fail(f"{name} isn't a regular file, so I won't open it.")
    with os.fdopen(fd, "rb") as f:
        if b"\x00" in f.read(BINARY_SNIFF_BYTES):
            size = info.st_size
            return ctx.fail(f"{name} looks like a binary file ({size:,} bytes); I can only read text.")
        f.seek(0)
        total, counted_all = _count_lines(f, MAX_COUNT_BYTES)
        if total == 0:
            return f"{name} is empty."
        if start > total and counted_all:
            return ctx.fail(f"{name} has only {total:,} lines, so there is no line {start:,}.")
        f.seek(0)
        lines: list[str] = []
        chars = 0
        cut_by_size = False
        number = 0
        for number, line in enumerate(_bounded_lines(f), 1):
            if number < start:
                continue
            if len(lines) >= limit:
                break
            if chars + len(line) > MAX_CHARS and lines:
                cut_by_size = True
                break
            lines.append(f"{number}: {line}")
            chars += len(line) + 1
        else:
            total, counted_all = number, True  # read to the end: now the total is known
    if not lines:
        return ctx.fail(f"{name} has only {total:,} lines, so there is no line {start:,}.")
    last = start + len(lines) - 1
    body = "\n".join(lines)
    if start == 1 and last == total:
        return f"{name} ({total:,} lines):\n{body}"
    if last == total:
        return f"{name}, showing lines {start:,}-{last:,} of {total:,}:\n{body}"
    reason = " (cut to keep it short)" if cut_by_size else ""
    of = (f"{total:,}" if counted_all else
          f"more than {total:,} (it is {_size(info.st_size)}; I counted the lines of the first "
          f"{_size(MAX_COUNT_BYTES)})")
    return (
        f"{name}, showing lines {start:,}-{last:,} of {of}{reason}; "
        f"ask for start_line {last + 1} to read on.\n{body}"
    )


def _count_lines(f: BinaryIO, limit: int) -> tuple[int, bool]:
    """Lines in the first `limit` bytes, counted in fixed chunks so one huge line cannot fill
    memory, and whether that was the whole file."""
    count = 0
    last = b"\n"
    left = limit
    while left > 0 and (chunk := f.read(min(1 << 20, left))):
        count += chunk.count(b"\n")
        last = chunk[-1:]
        left -= len(chunk)
    whole = left > 0 or not f.read(1)
    return count + (last != b"\n" and whole), whole


def _size(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}".replace(".0 ", " ")
    return f"{n:,} bytes"


def _bounded_lines(f: BinaryIO) -> Iterator[str]:
    """Decoded lines, each cut at MAX_LINE_CHARS; the rest of a long line is skipped unread."""
    while raw := f.readline(MAX_LINE_CHARS * 4):
        cut = not raw.endswith(b"\n")
        if cut:
            while (more := f.readline(1 << 16)) and not more.endswith(b"\n"):
                pass
            cut = bool(more) or len(raw) >= MAX_LINE_CHARS * 4
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if len(line) > MAX_LINE_CHARS or cut:
            line = line[:MAX_LINE_CHARS] + f"... (line cut at {MAX_LINE_CHARS:,} characters)"
        yield line


def _list_folder(where: JailedPath, name: str) -> str:
    entries = sorted(scan_beneath(where.root, where.relative), key=lambda e: e.name.lower())
    name = "The workspace" if name == "the workspace" else name
    if not entries:
        return f"{name} is an empty folder."
    shown = [e.name + ("/" if e.is_dir else "") for e in entries[:MAX_LISTED]]
    more = f" (showing {MAX_LISTED} of {len(entries)})" if len(entries) > MAX_LISTED else ""
    return f"{name} is a folder with {len(entries)} entries{more}:\n" + "\n".join(shown)


def _int(value: object, default: int) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
