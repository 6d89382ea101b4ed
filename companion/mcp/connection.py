"""One MCP server's connection: started and stopped on request, calls bounded, failures in words.

The official `mcp` SDK speaks the protocol. Its client must be entered and left in one task
(anyio cancel scopes), so each connection owns a task that holds the session open until
`stop()`; calls from any other task go through that session. A stdio server's process is
started by the SDK's own stdio transport from the command line the sandbox prepared, so
it runs sandboxed and ends with the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from companion.config import McpServerSettings

log = logging.getLogger(__name__)

__all__ = ["CallOutcome", "McpConnection", "PrepareCommand", "ServerState", "ToolInfo"]

RESULT_LIMIT = 16_000
"""Characters of one tool result the model reads; the rest is cut and the cut is said."""


class ServerState(StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True)
class ToolInfo:
    """What the server says about one of its tools."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False
    destructive: bool = False


@dataclass(frozen=True)
class CallOutcome:
    text: str
    """What the model reads: the tool's text (cut at RESULT_LIMIT, saying so) or a sentence."""
    ok: bool


PrepareCommand = Callable[[McpServerSettings], Awaitable[StdioServerParameters]]
"""Turns a stdio server's declaration into the sandboxed command the SDK starts."""


class McpConnection:
    """A server's session, its tools, and whether it is up (with the reason when it is not)."""

    def __init__(self, server: McpServerSettings, prepare: PrepareCommand,
                 on_change: Callable[[McpConnection], None] = lambda _c: None) -> None:
        self.server = server
        self._prepare = prepare
        self._on_change = on_change
        self.state = ServerState.STOPPED
        self.reason = ""
        """Why the server is down, as a sentence naming it."""
        self.tools: tuple[ToolInfo, ...] = ()
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def up(self) -> bool:
        return self.state is ServerState.UP

    # --- life cycle -------------------------------------------------------------------
    async def start(self) -> bool:
        """Start the server and list its tools; True when it is up. Bounded by timeout_s."""
        if self._owner is None or self._owner.done():
            self._stop, self._ready = asyncio.Event(), asyncio.Event()
            self._set(ServerState.STARTING, "")
            self._owner = asyncio.ensure_future(self._hold_session(self._ready))
        try:
            await asyncio.wait_for(self._ready.wait(), timeout=self.server.timeout_s)
        except TimeoutError:
            self._fail(f"The MCP server '{self.name}' did not start within "
                       f"{self.server.timeout_s:.0f} seconds.")
            await self.stop(keep_reason=True)
        return self.up

    async def stop(self, *, keep_reason: bool = False) -> None:
        """End the session; the SDK closes the server's stdin, then ends its process."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        self._stop.set()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(owner, timeout=10.0)
        if not owner.done():
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
        self._client = None
        self.tools = ()
        if not keep_reason:
            self._set(ServerState.STOPPED, "")

    async def _hold_session(self, ready: asyncio.Event) -> None:
        try:
            target = await self._target()
            async with Client(target, read_timeout_seconds=self.server.timeout_s) as client:
                listing = await client.list_tools()
                self.tools = tuple(_tool_info(tool) for tool in listing.tools)
                self._client = client
                self._set(ServerState.UP, "")
                ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # anyio wraps failures in ExceptionGroups
            log.warning("MCP server %s failed", self.name, exc_info=True)
            if not self._stop.is_set():
                self._fail(self._start_failure(exc))
        finally:
            self._client = None
            ready.set()

    async def _target(self) -> StdioServerParameters | str:
        if self.server.url:
            return self.server.url
        return await self._prepare(self.server)

    # --- calls ------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> CallOutcome:
        """Call `tool`; a server that is down, crashes or times out gives a sentence naming it."""
        client = self._client
        if client is None or not self.up:
            return CallOutcome(self.reason or f"The MCP server '{self.name}' is not running.", False)
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments),
                                            timeout=min(timeout_s, self.server.timeout_s))
        except TimeoutError:
            return CallOutcome(f"The MCP server '{self.name}' did not answer {tool} in time.", False)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the session ended under the call: the server is gone
            log.warning("MCP call %s on %s failed", tool, self.name, exc_info=True)
            sentence = (f"The MCP server '{self.name}' stopped working during {tool} "
                        f"({_short(exc)}); its tools are unavailable until it is restarted.")
            self._fail(sentence)
            self._stop.set()
            return CallOutcome(sentence, False)
        text = _result_text(result)
        if getattr(result, "is_error", False):
            return CallOutcome(text or f"{tool} on '{self.name}' reported an error.", False)
        return CallOutcome(text, True)

    # --- state ------------------------------------------------------------------------
    def _fail(self, sentence: str) -> None:
        self._client = None
        self._set(ServerState.DOWN, sentence)

    def _set(self, state: ServerState, reason: str) -> None:
        self.state, self.reason = state, reason
        self._on_change(self)

    def _start_failure(self, exc: BaseException) -> str:
        what = self.server.url or self.server.command
        return f"The MCP server '{self.name}' ({what}) could not start: {_short(exc)}."


def _tool_info(tool: Any) -> ToolInfo:
    annotations = getattr(tool, "annotations", None)
    return ToolInfo(
        name=tool.name,
        description=(tool.description or "").strip(),
        input_schema=dict(tool.input_schema or {"type": "object", "properties": {}}),
        read_only=getattr(annotations, "read_only_hint", None) is True,
        # The protocol's default: a tool that is not read-only may be destructive unless it
        # says otherwise.
        destructive=getattr(annotations, "destructive_hint", None) is not False,
    )


def _result_text(result: Any) -> str:
    parts = []
    for item in getattr(result, "content", None) or []:
        text = getattr(item, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(item, 'type', 'content')} not shown]")
    text = "\n".join(parts).strip()
    if not text and getattr(result, "structured_content", None) is not None:
        text = str(result.structured_content)
    if len(text) > RESULT_LIMIT:
        text = (f"{text[:RESULT_LIMIT]}\n[partial: showing {RESULT_LIMIT:,} of "
                f"{len(text):,} characters]")
    return text


def _short(exc: BaseException) -> str:
    """The innermost message of an exception (anyio wraps failures in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return message[:200]
