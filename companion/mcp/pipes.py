"""The MCP stdio transport over a process the sandbox door started.

The SDK's own stdio transport insists on spawning the server itself; ours must be started
through the one door (Gate.start), so this hands the SDK the same pair of message streams
over the door's pipes. The protocol stays the SDK's: messages are parsed and written with its
types, one JSON-RPC message per line as the stdio transport specifies.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable

import anyio
import mcp_types as types
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from companion.safety.sandbox.door import LiveProcess

log = logging.getLogger(__name__)

__all__ = ["process_transport"]


@contextlib.asynccontextmanager
async def process_transport(process: LiveProcess, on_garbage: Callable[[bytes], None] = lambda _line: None
                            ) -> AsyncIterator[TransportStreams]:
    """Message streams to and from `process`; leaving the block stops the process. A line that
    is not JSON-RPC goes to `on_garbage` too (a command that is no MCP server says why so)."""
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def server_to_session() -> None:
        async with to_session:
            while True:
                try:
                    line = await process.stdout.readline()
                except ValueError as exc:  # a line past the pipe's 1 MB limit
                    await to_session.send(exc)
                    return
                if not line:
                    return  # the server ended: the session sees its streams close
                if line.strip():
                    message = _parse(line)
                    if isinstance(message, Exception):
                        on_garbage(line)
                    await to_session.send(message)

    async def session_to_server() -> None:
        async with from_session:
            async for message in from_session:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    process.stdin.write(data.encode("utf-8") + b"\n")
                    await process.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    return

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server_to_session)
            tasks.start_soon(session_to_server)
            try:
                yield read_stream, write_stream
            finally:
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.stop()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        log.warning("an MCP server wrote a line that is not JSON-RPC: %.200r", line)
        return exc
