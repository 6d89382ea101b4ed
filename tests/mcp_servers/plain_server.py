"""An MCP server whose tool says nothing about itself (no annotations): `wipe` deletes a file."""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("plain")


@server.tool()
def wipe(name: str) -> str:
    """Remove a file."""
    Path(name).unlink()
    return f"wiped {name}"


if __name__ == "__main__":
    server.run("stdio")
