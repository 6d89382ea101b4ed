"""What her tools run beside: the approval gate with its sandbox, the reminders, and the MCP
servers' tool families. Started with her core, reconfigured when the settings change, closed
with her. Tools reach them as ctx.services["gate"], ["reminders"] and ["mcp"]."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.config import Paths, Settings
from companion.events import ErrorOccurred, Event, EventBus, WorkChanged
from companion.paths import own_paths
from companion.supervisor import Supervisor, Watch
from companion.tools.builtin import web_search
from companion.tools.registry import Registry

if TYPE_CHECKING:
    from companion.mcp import McpManager
    from companion.reminders import ReminderScheduler
    from companion.safety.gate import Gate

REMINDER_WATCH = Watch("my reminders", "reminders", restart_on=(OSError,))
"""A reminders file that can't be written (a full disk) must not stop every later reminder."""
MCP_WATCH = Watch("my MCP tool servers", "tools")


class ToolServices:
    """`services` is the dict handed to every tool (ctx.services): each service joins it as it starts.
    `is_quiet` and `say` are how a due reminder waits for a quiet moment and is said."""

    def __init__(self, paths: Paths, bus: EventBus, supervisor: Supervisor, services: dict[str, Any], *,
                 is_quiet: Callable[[], bool], say: Callable[[str], None]) -> None:
        self.paths, self.bus, self.supervisor, self.services = paths, bus, supervisor, services
        self._is_quiet, self._say = is_quiet, say
        self.registry: Registry | None = None
        self.gate: Gate | None = None
        """The approval gate every command passes; front-ends attach their approver to it."""
        self.reminders: ReminderScheduler | None = None
        self.mcp: McpManager | None = None
        """The MCP servers' tool families (None while no server is configured)."""

    def start(self, settings: Settings, registry: Registry, workspace: Path, also_hidden: tuple[Path, ...]) -> None:
        self.registry = registry
        self._start_gate(settings, workspace, also_hidden)
        self._start_reminders(settings)
        self._start_mcp(settings)

    def apply(self, settings: Settings, old: Settings, also_hidden: tuple[Path, ...]) -> None:
        """New settings: the gate's workspace and hidden files, the sandbox, the search address,
        and the MCP servers (started, or reconfigured in the background)."""
        if self.gate is not None:
            self.gate.workspace = settings.tools.workspace_path()
            self.gate.door.hidden = own_paths(self.paths.config_dir, self.paths.data_dir, *also_hidden)
        web_search.configure(settings.tools.search_url)
        self._configure_sandbox(settings)
        if settings.mcp != old.mcp:
            if self.mcp is None:
                self._start_mcp(settings)
            else:
                servers = settings.mcp.servers
                self.supervisor.spawn(MCP_WATCH, lambda: self.mcp.reconfigure(servers))

    def deliver_pending(self) -> None:
        """A quiet moment: reminders that fell due meanwhile are said now."""
        if self.reminders is not None:
            self.reminders.deliver_pending()

    def family_notes(self) -> dict[str, str]:
        """A line per MCP family for Settings: running with its tools, stopped, or why not."""
        return self.mcp.notes() if self.mcp is not None else {}

    async def stop_reminders(self) -> None:
        if self.reminders is not None:
            await self.reminders.stop()

    async def close(self) -> None:
        """After the supervisor has stopped: the servers, then long-lived sandboxed processes."""
        if self.mcp is not None:
            await self.mcp.close()
        if self.gate is not None:
            await self.gate.close()

    def _start_gate(self, settings: Settings, workspace: Path, also_hidden: tuple[Path, ...]) -> None:
        """Nobody is asked until a front-end attaches an approver: chat a TerminalApprover, the
        window a CardApprover."""
        from companion.safety.gate import build_gate

        self._configure_sandbox(settings)
        self.gate = build_gate(workspace, self.paths.approvals_file, self.paths.data_dir, bus=self.bus,
                               also_hidden=also_hidden)
        self.services["gate"] = self.gate
        if self.gate.grants.notice:
            self.bus.emit(ErrorOccurred("safety", "approvals_broken", self.gate.grants.notice))

    def _configure_sandbox(self, settings: Settings) -> None:
        from companion.safety.sandbox import probe

        probe.configure(allow_unsandboxed=settings.tools.run_without_sandbox)
        if self.registry is not None:
            self.registry.forget_checks()  # shell/execute_code's check() reads it: answer afresh

    def _start_reminders(self, settings: Settings) -> None:
        """Reminders missed while closed are told now; due ones are said when quiet."""
        from companion.reminders import FILE_NAME, ReminderScheduler, ReminderStore

        web_search.configure(settings.tools.search_url)
        store = ReminderStore(self.paths.data_dir / FILE_NAME)
        if store.notice:
            self.bus.emit(ErrorOccurred("tools", "reminders_broken", store.notice))
        self.reminders = ReminderScheduler(store, self.bus, is_quiet=self._is_quiet, say=self._say)
        self.services["reminders"] = self.reminders
        self.reminders.start(lambda run: self.supervisor.spawn(REMINDER_WATCH, run))

    def _start_mcp(self, settings: Settings) -> None:
        """Servers whose family is on start in the background; their tools appear when up."""
        if not settings.mcp.servers or self.registry is None:
            return
        from companion.mcp import McpManager
        from companion.mcp.launch import sandboxed_starter

        assert self.gate is not None, "the gate starts before the servers"
        self.mcp = McpManager(settings.mcp.servers, self.registry, sandboxed_starter(self.gate), bus=self.bus)
        self.services["mcp"] = self.mcp
        self.bus.subscribe(self._release_job_families)
        self.mcp.start()

    def _release_job_families(self, event: Event) -> None:
        """A family a job switched on for itself goes off again when the job ends."""
        if isinstance(event, WorkChanged) and event.status != "running" and self.mcp is not None:
            self.mcp.release_job_activations()
