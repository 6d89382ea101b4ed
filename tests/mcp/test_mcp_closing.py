"""Closing a server's connection leaves nothing of it running, whenever it happens."""

from __future__ import annotations

import asyncio
import sys

from test_mcp_tools import NOTES_SERVER

from companion.config import McpServerSettings
from companion.mcp import ServerState
from companion.mcp.connection import McpConnection


async def test_stopping_a_server_still_being_launched_ends_its_start_at_once():
    launching, cancelled = asyncio.Event(), asyncio.Event()

    async def launcher_asking_the_user(_server):
        launching.set()
        try:
            await asyncio.Event().wait()  # the card that asks whether to download it stays open
        finally:
            cancelled.set()

    server = McpServerSettings(name="slow", command=sys.executable, args=(str(NOTES_SERVER),), timeout_s=30.0)
    connection = McpConnection(server, launcher_asking_the_user)
    starting = asyncio.ensure_future(connection.start())
    await launching.wait()
    stopping = asyncio.ensure_future(connection.stop())
    # Bounded below the connection's 10 s wait for a running server to see the stop, which a
    # launch in progress never does.
    await asyncio.wait({stopping}, timeout=5.0)
    assert stopping.done() and cancelled.is_set() and connection.state is ServerState.STOPPED
    assert await starting is False
