"""The configured MCP servers as switchable tool families of the registry.

Switching `mcp:<name>` on starts its server and registers its tools; switching it off ends
the server and its tools are not dispatchable from that moment. A background job can switch
a family on for itself (activate_tools); it goes off again when the job ends. A tool name
that already exists is never replaced: that tool is left out and the family says why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from companion.config import McpServerSettings
from companion.events import ErrorOccurred, EventBus
from companion.logs import details_hint
from companion.mcp.connection import McpConnection, ServerState, StartServer
from companion.mcp.family import tool_spec
from companion.mcp.program import seen_line
from companion.tools.registry import Registry

log = logging.getLogger(__name__)

__all__ = ["FamilyStatus", "McpManager", "start_failure_line"]


def start_failure_line(connection: McpConnection) -> str:
    """What the user reads when a server won't start: what happened, how to fix it, and where
    the full trace is."""
    return (f"{connection.reason} Fix its entry in Settings → Toolsets, or switch "
            f"{connection.server.family} off there.{details_hint()}")


@dataclass(frozen=True)
class FamilyStatus:
    """What Settings and activate_tools show about one server."""

    family: str
    state: ServerState
    reason: str
    tools: tuple[tuple[str, str, str], ...]
    """(name, description, risk) of each tool she can use from it."""
    skipped: tuple[str, ...] = ()
    """Tools left out because another tool already has that name."""

    @property
    def up(self) -> bool:
        return self.state is ServerState.UP


class McpManager:
    def __init__(self, servers: Iterable[McpServerSettings], registry: Registry,
                 start_server: StartServer, bus: EventBus | None = None) -> None:
        self._registry = registry
        self._start_server = start_server
        self._bus = bus
        self._connections: dict[str, McpConnection] = {}
        self._registered: dict[str, list[str]] = {}
        self._skipped: dict[str, list[str]] = {}
        self._job_activated: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        for server in servers:
            self._add(server)

    @property
    def families(self) -> list[str]:
        return sorted(self._connections)

    def connection(self, family: str) -> McpConnection | None:
        return self._connections.get(family)

    # --- life cycle -------------------------------------------------------------------
    def start(self) -> None:
        """Start every server whose family is switched on (in the background)."""
        disabled = self._registry.disabled_toolsets()
        for family in self._connections:
            if family not in disabled:
                self._spawn(self._start(family))

    async def close(self) -> None:
        """Quit: end every server."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(self._stop(family) for family in self._connections))

    async def reconfigure(self, servers: Iterable[McpServerSettings]) -> None:
        """New settings: servers removed or changed are ended, new or changed ones start."""
        wanted = {server.family: server for server in servers}
        for family, connection in list(self._connections.items()):
            if wanted.get(family) != connection.server:
                await self._stop(family)
                self._registry.withdraw_family(family)
                del self._connections[family], self._registered[family], self._skipped[family]
        disabled = self._registry.disabled_toolsets()
        for family, server in wanted.items():
            if family not in self._connections:
                self._add(server)
                if family not in disabled:
                    self._spawn(self._start(family))

    async def activate(self, family: str) -> FamilyStatus | str:
        """Switch `family` on for the running job and wait until its server is up."""
        connection = self._connections.get(family)
        if connection is None:
            known = ", ".join(self.families) or "none are configured"
            return f"There is no MCP family called {family!r} (families: {known})."
        if family in self._registry.disabled_toolsets():
            self._job_activated.add(family)
            self._registry.set_toolset_enabled(family, True)  # calls back: starts the server
        await self._start(family)
        return self.status(family)

    def release_job_activations(self) -> None:
        """The job ended: families it switched on go off again."""
        for family in sorted(self._job_activated):
            self._registry.set_toolset_enabled(family, False)
        self._job_activated.clear()

    # --- what it looks like -----------------------------------------------------------
    def status(self, family: str) -> FamilyStatus:
        connection = self._connections[family]
        tools = self._registry.tools()
        listed = tuple(
            (name, tools[name].schema.get("description", ""), tools[name].risk)
            for name in self._registered[family] if name in tools
        )
        return FamilyStatus(family, connection.state, connection.reason, listed,
                            tuple(self._skipped[family]))

    def statuses(self) -> list[FamilyStatus]:
        return [self.status(family) for family in self.families]

    def notes(self) -> dict[str, str]:
        """One line per family for Settings: running with its tools, stopped, or why not."""
        notes = {}
        for status in self.statuses():
            if status.state is ServerState.UP:
                count = len(status.tools)
                note = f"MCP server running · {count} tool{'s' if count != 1 else ''}"
                if status.skipped:
                    note += f" · left out (names taken): {', '.join(status.skipped)}"
                visible = self._connections[status.family].visible
                if visible:  # what it is shown of the hidden home, beyond what every sandbox sees
                    note += f" · {seen_line(visible)}"
            elif status.state is ServerState.DOWN:
                note = f"unavailable: {status.reason}"
            elif status.state is ServerState.STARTING:
                note = "MCP server starting…"
            else:
                note = "MCP server stopped (switched off)"
            notes[status.family] = note
        return notes

    # --- internals --------------------------------------------------------------------
    def _add(self, server: McpServerSettings) -> None:
        family = server.family
        self._connections[family] = McpConnection(server, self._start_server, on_change=self._changed)
        self._registered[family], self._skipped[family] = [], []
        self._registry.offer_family(family, self._switch_callback(family))

    def _switch_callback(self, family: str) -> Callable[[bool], None]:
        def switched(on: bool) -> None:
            if on:
                self._spawn(self._start(family))
            else:
                self._job_activated.discard(family)
                self._unregister(family)
                self._spawn(self._stop(family))

        return switched

    async def _start(self, family: str) -> None:
        connection = self._connections[family]
        if connection.up:
            return
        if not await connection.start():
            if self._bus is not None:
                # One line for the user (the trace is in the log); the model reads the reason alone.
                self._bus.emit(ErrorOccurred("tools", "mcp_down", start_failure_line(connection)))
            return
        if family in self._registry.disabled_toolsets():  # switched off while it started
            await connection.stop()
            return
        self._register(family)

    async def _stop(self, family: str) -> None:
        self._unregister(family)
        await self._connections[family].stop()

    def _register(self, family: str) -> None:
        connection = self._connections[family]
        self._unregister(family)
        taken = self._registry.tools()
        for tool in connection.tools:
            if tool.name in taken:
                self._skipped[family].append(tool.name)
                log.warning("MCP tool %s from %s would replace a tool; left out", tool.name, family)
                continue
            self._registry.register(tool_spec(connection, tool))
            self._registered[family].append(tool.name)

    def _unregister(self, family: str) -> None:
        for name in self._registered[family]:
            self._registry.deregister(name)
        self._registered[family] = []
        self._skipped[family] = []

    def _changed(self, connection: McpConnection) -> None:
        # check() answers are cached; a server going down must disappear from the offer now.
        self._registry.forget_checks()

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task) -> None:
        # A start or stop that fails unexpectedly is said, never lost in the loop's log.
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        log.warning("an MCP server task failed", exc_info=task.exception())
        if self._bus is not None:
            self._bus.emit(ErrorOccurred("tools", "mcp_failed",
                                         f"An MCP tool server failed unexpectedly: {task.exception()}."
                                         f"{details_hint()}"))
