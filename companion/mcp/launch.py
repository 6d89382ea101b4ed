"""How a stdio MCP server starts: through the sandbox's one door, as the user declared it,
seeing of the hidden home only its own program and files (program.py, launchers.py)."""

from __future__ import annotations

import shlex

from companion.config import McpServerSettings
from companion.mcp.connection import StartServer
from companion.mcp.launchers import (
    LauncherError,
    NeedsDownload,
    download,
    download_line,
    launcher_of,
    resolve,
)
from companion.mcp.program import ServerProgram, plain_program
from companion.safety.gate import Gate
from companion.safety.sandbox.door import LiveProcess

__all__ = ["program_for", "sandboxed_starter"]


async def program_for(server: McpServerSettings, gate: Gate) -> ServerProgram:
    """What runs in the server's sandbox and what it sees; a uvx/npx package not downloaded yet
    is downloaded once, outside the sandbox, after the user's yes (LauncherError otherwise)."""
    argv = (server.command, *server.args)
    cwd = str(gate.workspace)
    own = gate.door.hidden
    launcher = launcher_of(argv)
    if launcher is None:
        return plain_program(argv, cwd, own)
    try:
        return await resolve(argv, cwd, own)
    except NeedsDownload:
        pass
    line = download_line(argv, cwd)
    verdict = await gate.review_download(
        line, tool=server.family,
        reason=(f"To start the MCP server '{server.name}' I need to download its package with {launcher} "
                "once, outside the sandbox, into its cache; none of the package's code runs until it "
                "starts in the sandbox."))
    if not verdict.allowed:
        raise LauncherError("download_refused", f"its package isn't downloaded and the download wasn't "
                            f"allowed ({verdict.sentence}); run {shlex.join(argv)} once yourself, "
                            "or allow the download next time")
    await download(verdict, argv, cwd)
    return await resolve(argv, cwd, own)


def sandboxed_starter(gate: Gate) -> StartServer:
    """Servers run sandboxed like every process: the workspace is their only writable place
    and they get the network only when their declaration says `network = true`."""

    async def start(server: McpServerSettings) -> LiveProcess:
        program = await program_for(server, gate)
        verdict = gate.declared(program.argv, tool=server.family, network=server.network,
                                visible=program.visible)
        return await gate.start(verdict, risk="exec", env={**dict(program.env), **server.env})

    return start
