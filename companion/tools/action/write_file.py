"""write_file — create or replace a text file in the workspace (5 MB cap, atomic, makes folders)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from companion.safety.jail import (
    JailError,
    resolve_in_workspace,
    shown_path,
    write_bytes_keeping_mode,
)
from companion.tools.action._files import MAX_WRITE_BYTES, file_error_sentence

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
        path = resolve_in_workspace(ctx.workspace, args.get("path"), allow_root=False)
    except JailError as exc:
        return ctx.fail(exc.sentence)
    data = content.encode("utf-8")
    name = shown_path(ctx.workspace, path)
    if len(data) > MAX_WRITE_BYTES:
        return ctx.fail(
            f"That's {len(data) / 1_048_576:.1f} MB of text; I only write files up to 5 MB, "
            f"so I left {name} alone."
        )
    if path.is_dir():
        return ctx.fail(f"{name} is a folder, so I can't write a file there.")
    if path.exists() and not path.is_file():
        return ctx.fail(f"{name} isn't a regular file, so I won't replace it.")
    try:
        existed = await asyncio.to_thread(_write, path, data)
    except OSError as exc:
        return ctx.fail(file_error_sentence(exc, name, "write"))
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Replaced" if existed else "Created"
    return f"{verb} {name}: {len(data):,} bytes, {lines:,} line{'s' if lines != 1 else ''}."


def _write(path: Path, data: bytes) -> bool:
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_keeping_mode(path, data)
    return existed
