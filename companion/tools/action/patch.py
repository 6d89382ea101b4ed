"""patch — replace one exact piece of text in a workspace file; anything but one match changes nothing."""

from __future__ import annotations

import asyncio
import os
import stat

from companion.safety.consent.still import Stilled
from companion.safety.jail.beneath import open_beneath, write_beneath
from companion.safety.jail.jail import JailedPath, JailError, shown_path
from companion.tools.action._files import MAX_WRITE_BYTES, file_error_sentence, jail, still_writing

SCHEMA = {
    "type": "function",
    "name": "patch",
    "description": (
        "Change part of a text file in the workspace: old_text must appear exactly once in the "
        "file and is replaced by new_text. Include enough surrounding text to be unique."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace."},
            "old_text": {"type": "string", "description": "The exact text to replace."},
            "new_text": {"type": "string", "description": "The text to put in its place."},
        },
        "required": ["path", "old_text", "new_text"],
        "additionalProperties": False,
    },
}
TOOLSET = "file"
RISK = "write"

ANNOUNCE = "Let me make that change."
HEARTBEAT = ["Still editing..."]
COMPLETE = "The change is in."
FAIL = "I couldn't make that change."
EXPRESSIONS = {"focus": "determined", "done": "happy", "fail": "confused"}


async def execute(args: dict, ctx) -> str:
    args = args if isinstance(args, dict) else {}
    old, new = args.get("old_text"), args.get("new_text")
    if not isinstance(old, str) or not old:
        return ctx.fail("I need the exact text to replace as old_text.")
    if not isinstance(new, str):
        return ctx.fail("I need the replacement text as new_text (it may be empty).")
    try:
        where = jail(ctx, args.get("path"), allow_root=False)
    except JailError as exc:
        return ctx.fail(exc.sentence)
    name = shown_path(ctx.workspace, where.path)
    try:
        async with still_writing(ctx, f"change {name}"):
            return await asyncio.to_thread(_patch, where, name, old, new, ctx)
    except Stilled as exc:
        return ctx.refuse(exc.sentence)
    except OSError as exc:
        return ctx.fail(file_error_sentence(exc, name, "change"))


def _patch(where: JailedPath, name: str, old: str, new: str, ctx) -> str:
    fd = open_beneath(where.root, where.relative)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            return ctx.fail(f"{name} is a folder, not a file.")
        return ctx.fail(f"{name} isn't a regular file, so I won't change it.")
    with os.fdopen(fd, "rb") as f:
        if info.st_size > MAX_WRITE_BYTES:
            return ctx.fail(f"{name} is over 5 MB; I only patch files up to that size.")
        raw = f.read(MAX_WRITE_BYTES + 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ctx.fail(f"{name} isn't UTF-8 text, so I left it alone.")
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old:
        # The model writes "\n"; a Windows-style file has "\r\n". Match it the file's way.
        old, new = _crlf(old), _crlf(new)
        count = text.count(old)
    if count == 0:
        return ctx.fail(f"I couldn't find that text in {name}, so I changed nothing.")
    if count > 1:
        return ctx.fail(
            f"That text appears in {count} places in {name}, so I changed nothing; "
            "include more of the surrounding text so it matches only one place."
        )
    updated = text.replace(old, new, 1)
    data = updated.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        return ctx.fail(f"The change would make {name} larger than 5 MB, so I changed nothing.")
    write_beneath(where.root, where.relative, data)
    line = text[: text.index(old)].count("\n") + 1
    removed, added = old.count("\n") + 1, new.count("\n") + 1 if new else 0
    return f"Changed {name} at line {line:,}: {removed} line(s) replaced by {added}."


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")
