"""One MCP server's connection: started and stopped on request, calls bounded, failures in words.

The official `mcp` SDK speaks the protocol. Its client must be entered and left in one task
(anyio cancel scopes), so each connection owns a task that holds the session open until
`stop()` or until the server's process ends; calls from any other task go through that
session. A stdio server's process is started through the sandbox's one door and ends with
the session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mcp import Client

from companion.config import McpServerSettings
from companion.mcp.pipes import process_transport
from companion.safety.sandbox.door import LiveProcess

log = logging.getLogger(__name__)

__all__ = ["CallOutcome", "McpConnection", "ServerState", "StartServer", "ToolInfo"]

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
    says_destructive: bool = False
    """The server itself says so (destructiveHint true): asked even when the server is trusted."""


@dataclass(frozen=True)
class CallOutcome:
    text: str
    """What the model reads: the tool's text (cut at RESULT_LIMIT, saying so) or a sentence."""
    ok: bool


StartServer = Callable[[McpServerSettings], Awaitable[LiveProcess]]
"""Starts a stdio server's process (through the sandbox's door) from its declaration."""


class McpConnection:
    """A server's session, its tools, and whether it is up (with the reason when it is not)."""

    def __init__(self, server: McpServerSettings, start_server: StartServer,
                 on_change: Callable[[McpConnection], None] = lambda _c: None) -> None:
        self.server = server
        self._start_server = start_server
        self._on_change = on_change
        self.state = ServerState.STOPPED
        self.reason = ""
        """Why the server is down, as a sentence naming it."""
        self.tools: tuple[ToolInfo, ...] = ()
        self.pid: int | None = None
        """The server's process (its sandbox) while it runs; None for a server at a URL."""
        self.visible: tuple[str, ...] = ()
        """What of the hidden home its sandbox was shown, read-only (its program's own files)."""
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._launched = asyncio.Event()
        """Its program is running (or it failed before): what timeout_s then bounds is the handshake."""
        self._garbage = b""
        """The first line it wrote that was not the protocol, if any."""

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
            self._stop, self._ready, self._launched = asyncio.Event(), asyncio.Event(), asyncio.Event()
            self._garbage = b""
            self._set(ServerState.STARTING, "")
            self._owner = asyncio.ensure_future(self._hold_session(self._ready))
        try:
            # Finding its program may ask the user and download its package once (launch.py),
            # bounded there (the card's expiry, the download's limit): not part of timeout_s.
            await self._launched.wait()
            await asyncio.wait_for(self._ready.wait(), timeout=self.server.timeout_s)
        except TimeoutError:
            self._fail(f"The MCP server '{self.name}' did not start within "
                       f"{self.server.timeout_s:.0f} seconds{self._garbage_said()}.")
            if self._owner is not None:
                self._owner.cancel()  # stuck in the handshake: it would never see the stop
            await self.stop(keep_reason=True)
        return self.up

    async def stop(self, *, keep_reason: bool = False) -> None:
        """End the session; the SDK closes the server's stdin, then ends its process."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        self._stop.set()
        if not self._ready.is_set():
            owner.cancel()  # still starting (its launcher may be asking the user): it would never see the stop
        try:
            await asyncio.wait({owner}, timeout=10.0)
        finally:  # also when the stop itself is cancelled: the session ends, never left behind
            if not owner.done():
                owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
        self._client = None
        self.tools = ()
        if not keep_reason:
            self._set(ServerState.STOPPED, "")

    async def _hold_session(self, ready: asyncio.Event) -> None:
        process: LiveProcess | None = None
        try:
            if self.server.url:
                target: Any = self.server.url
            else:
                process = await self._start_server(self.server)
                self.pid, self.visible = process.pid, process.visible
                target = process_transport(process, on_garbage=self._heard_garbage)
            self._launched.set()
            async with Client(target, read_timeout_seconds=self.server.timeout_s) as client:
                listing = await client.list_tools()
                self.tools = tuple(_tool_info(tool) for tool in listing.tools)
                self._client = client
                self._set(ServerState.UP, "")
                ready.set()
                await self._until_stopped_or_ended(process)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # anyio wraps failures in ExceptionGroups
            log.warning("MCP server %s failed", self.name, exc_info=True)
            if not self._stop.is_set():
                self._fail(self._start_failure(exc, process))
        finally:
            self._client = None
            self.pid = None
            self._launched.set()
            ready.set()

    async def _until_stopped_or_ended(self, process: LiveProcess | None) -> None:
        stopped = asyncio.ensure_future(self._stop.wait())
        waiters: set[asyncio.Future[Any]] = {stopped}
        if process is not None:
            waiters.add(asyncio.ensure_future(process.wait()))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)  # ended here, not left to the loop
        if not self._stop.is_set() and process is not None:
            self._fail(f"The MCP server '{self.name}' stopped (exit code {process.returncode})"
                       f"{_last_words(process)}; its tools are unavailable until it is restarted.")

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
    def _heard_garbage(self, line: bytes) -> None:
        if not self._garbage:
            self._garbage = line

    def _garbage_said(self) -> str:
        if not self._garbage:
            return ""
        text = self._garbage.decode("utf-8", errors="replace").strip()[:80]
        return f'; it answered "{text}", which is not MCP: is that command an MCP server?'

    def _fail(self, sentence: str) -> None:
        self._client = None
        self._set(ServerState.DOWN, sentence)

    def _set(self, state: ServerState, reason: str) -> None:
        self.state, self.reason = state, reason
        self._on_change(self)

    def _start_failure(self, exc: BaseException, process: LiveProcess | None) -> str:
        what = self.server.url or self.server.command
        why = getattr(_innermost(exc), "sentence", None) or _short(exc)
        return f"The MCP server '{self.name}' ({what}) could not start: {why}{_last_words(process)}."


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
        says_destructive=getattr(annotations, "destructive_hint", None) is True,
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


def _innermost(exc: BaseException) -> BaseException:
    """anyio wraps failures in exception groups: the first real one."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _short(exc: BaseException) -> str:
    exc = _innermost(exc)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return message[:200]


def _last_words(process: LiveProcess | None) -> str:
    """The server's last line on stderr, which usually says what went wrong."""
    if process is None:
        return ""
    lines = [line for line in process.stderr_tail().splitlines() if line.strip()]
    return f' (it said: "{lines[-1].strip()[:200]}")' if lines else ""
