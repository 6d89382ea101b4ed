"""write_file — create or replace a text file in the workspace (5 MB cap, atomic, makes folders)."""

from __future__ import annotations

import asyncio
import stat

from companion.safety.consent.still import Stilled
from companion.safety.jail.beneath import stat_beneath, write_beneath
from companion.safety.jail.jail import JailedPath, JailError, shown_path
from companion.tools.action._files import MAX_WRITE_BYTES, file_error_sentence, jail, still_writing

SCHEMA = {
    "type": "function",
    "name": "write_file",
    "description": (
        "Write a text file in the workspace, creating missing folders. Replaces the whole "
        "file if it exists; to change part of a file use patch instead."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace."},
            "content": {"type": "string", "description": "The complete new text of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
}
TOOLSET = "file"
RISK = "write"

ANNOUNCE = "I'll write that file."
HEARTBEAT = ["Still writing..."]
COMPLETE = "The file is saved."
FAIL = "I couldn't write that file."
EXPRESSIONS = {"focus": "determined", "done": "happy", "fail": "sad"}


async def execute(args: dict, ctx) -> str:
    args = args if isinstance(args, dict) else {}
    content = args.get("content")
    if not isinstance(content, str):
        return ctx.fail("I need the file's text as content.")
    try:
        where = jail(ctx, args.get("path"), allow_root=False)
    except JailError as exc:
        return ctx.fail(exc.sentence)
    data = content.encode("utf-8")
    name = shown_path(ctx.workspace, where.path)
    if len(data) > MAX_WRITE_BYTES:
        return ctx.fail(
            f"That's {len(data) / 1_048_576:.1f} MB of text; I only write files up to 5 MB, "
            f"so I left {name} alone."
        )
    try:
        async with still_writing(ctx, f"write {name}"):
            return await _write(where, content, data, name, ctx)
    except Stilled as exc:
        return ctx.refuse(exc.sentence)


async def _write(where: JailedPath, content: str, data: bytes, name: str, ctx) -> str:
    """Write it now (the workspace is hers to write); what she says."""
    try:
        info = stat_beneath(where.root, where.relative)
    except OSError as exc:  # e.g. a folder on the way turned into a link (ELOOP)
        return ctx.fail(file_error_sentence(exc, name, "write"))
    if info is not None and stat.S_ISDIR(info.st_mode):
        return ctx.fail(f"{name} is a folder, so I can't write a file there.")
    if info is not None and not stat.S_ISREG(info.st_mode):
        return ctx.fail(f"{name} isn't a regular file, so I won't replace it.")
    try:
        # Opened folder by folder without following links: a swap after the check goes nowhere.
        existed = await asyncio.to_thread(write_beneath, where.root, where.relative, data, make_folders=True)
    except OSError as exc:
        return ctx.fail(file_error_sentence(exc, name, "write"))
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Replaced" if existed else "Created"
    return f"{verb} {name}: {len(data):,} bytes, {lines:,} line{'s' if lines != 1 else ''}."
