"""How a stdio MCP server is started: the sandbox prepares its command line."""

from __future__ import annotations

from pathlib import Path

from mcp.client.stdio import StdioServerParameters

from companion.config import McpServerSettings
from companion.mcp.connection import PrepareCommand
from companion.safety.runner import safe_environment


def stdio_launcher(workspace: Path) -> PrepareCommand:
    async def prepare(server: McpServerSettings) -> StdioServerParameters:
        return StdioServerParameters(
            command=server.command, args=list(server.args),
            env=safe_environment(server.env), cwd=str(workspace),
        )

    return prepare
