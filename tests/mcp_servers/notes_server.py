"""A small MCP server for the tests, written with the SDK's server API.

It works on the files of its working directory (the workspace): `read_note` is read-only,
`append_note` only adds, `delete_note` is destructive, `slow_echo` answers after a wait (to be
killed mid-call), `connect` tries the network, and `get_time` collides with one of her own tools.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("notes")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_note(name: str) -> str:
    """Read a note from the workspace."""
    return Path(name).read_text(encoding="utf-8")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def append_note(name: str, text: str) -> str:
    """Add a line to a note."""
    with Path(name).open("a", encoding="utf-8") as handle:
        handle.write(text + "\n")
    return f"added to {name}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_note(name: str) -> str:
    """Delete a note from the workspace."""
    Path(name).unlink()
    return f"deleted {name}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow_echo(text: str, seconds: float) -> str:
    """Echo the text after a wait; writes started.txt first, so a test knows the call began."""
    Path("slow_echo.started").write_text(str(os.getpid()), encoding="utf-8")
    await asyncio.sleep(seconds)
    return text


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def connect(port: int, host: str = "127.0.0.1") -> str:
    """Try to reach a TCP port on the machine's loopback (or on `host`)."""
    try:
        with socket.create_connection((host, port), timeout=3):
            return "connected"
    except OSError as exc:
        return f"no connection: {exc}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def get_time() -> str:
    """A name that is already taken by one of her own tools."""
    return "never offered"


if __name__ == "__main__":
    server.run("stdio")
