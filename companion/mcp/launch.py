"""How a stdio MCP server starts: through the sandbox's one door, as the user declared it."""

from __future__ import annotations

from companion.config import McpServerSettings
from companion.mcp.connection import StartServer
from companion.safety.door import LiveProcess
from companion.safety.gate import Gate


def sandboxed_starter(gate: Gate) -> StartServer:
    """Servers run sandboxed like every process: the workspace is their only writable place
    and they get the network only when their declaration says `network = true`."""

    async def start(server: McpServerSettings) -> LiveProcess:
        verdict = gate.declared((server.command, *server.args), tool=server.family,
                                network=server.network)
        return await gate.start(verdict, risk="exec", env=server.env)

    return start
