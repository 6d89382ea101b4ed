"""The one door a process goes through: a ticket from the gate, the tool's RISK, the sandbox.

The gate issues a `Permit` with every allowed verdict: exactly what will run (argv and any
stdin), whether it may use the network, and a one-time ticket. `ProcessDoor` starts a
process only for a permit it issued and has not used yet, only for a tool whose RISK is
`exec`, and only inside the bubblewrap sandbox (or, where the sandbox cannot run, when the
user switched on "Run commands without a sandbox"). Every start and its outcome is written
to the audit log.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from companion.errors import CompanionError, Stage
from companion.safety import sandbox
from companion.safety._runner import (
    KILL_GRACE_S,
    LiveProcess,
    RunResult,
    run_process,
    safe_environment,
    start_process,
)
from companion.safety.approval import AuditLog
from companion.safety.jail import JailError, ensure_workspace

__all__ = ["LiveProcess", "Permit", "ProcessDoor", "ProcessRefused", "RunResult"]


class ProcessRefused(CompanionError):
    """The door would not start the process; `sentence` says why."""

    stage = Stage.SAFETY


@dataclass(frozen=True)
class Permit:
    """What an allowed verdict lets run: exactly this, once."""

    argv: tuple[str, ...]
    shown: str
    """The line (or code) the user saw or the rules judged."""
    tool: str
    stdin: bytes | None = None
    network: bool = False
    """Share the network: only when the user was just asked, with "This needs the internet" on the card."""
    how: str = ""
    ticket: str = field(default="", repr=False, compare=False)


class ProcessDoor:
    """Issues permits and honours each one once; keeps the long-lived processes it started."""

    def __init__(self, workspace: Callable[[], Path], audit: Callable[[], AuditLog | None],
                 hidden: tuple[Path, ...] = ()) -> None:
        self._workspace = workspace
        self._audit = audit
        self.hidden = hidden
        """Her own folders (config, data) hidden inside the sandbox besides the homes."""
        self._tickets: dict[str, Permit] = {}
        self._live: set[LiveProcess] = set()

    def issue(self, argv: tuple[str, ...], shown: str, tool: str, *, stdin: bytes | None,
              network: bool, how: str) -> Permit:
        permit = Permit(argv, shown, tool, stdin, network, how, secrets.token_hex(16))
        self._tickets[permit.ticket] = permit
        return permit

    def _admit(self, permit: object, risk: str) -> tuple[Permit, list[str], Path, bool]:
        """Check everything before anything starts; returns (permit, argv to run, workspace, sandboxed)."""
        if risk != "exec":
            raise ProcessRefused("risk", f"A tool with RISK {risk!r} may not start programs; only exec tools can.")
        issued = self._tickets.get(permit.ticket) if isinstance(permit, Permit) else None
        # The ticket must be one it issued, for exactly this permit (argv, stdin, network).
        if issued is None or issued != permit:
            raise ProcessRefused("no_permit", "That wasn't approved by the gate, so I won't run it.")
        del self._tickets[permit.ticket]  # once
        try:
            workspace = ensure_workspace(self._workspace())
        except JailError as exc:
            raise ProcessRefused("workspace", exc.sentence) from exc
        reason = sandbox.unavailable_reason()
        if reason is None:
            policy = sandbox.SandboxPolicy(workspace, network=permit.network, hidden=self.hidden)
            bwrap = sandbox.find_bwrap()
            assert bwrap is not None
            return permit, sandbox.bwrap_command(bwrap, policy, permit.argv), workspace, True
        if sandbox.allow_unsandboxed():
            return permit, list(permit.argv), workspace, False
        raise ProcessRefused("no_sandbox", f"{reason} {sandbox.FIX}")

    async def run(self, permit: Permit, *, risk: str, timeout_s: float,
                  cancel: asyncio.Event | None = None, grace_s: float = KILL_GRACE_S,
                  env: Mapping[str, str] | None = None) -> RunResult:
        """Run a permitted command to its end (time limit, output cap, cancel) inside the sandbox."""
        permit, argv, workspace, sandboxed = self._admit(permit, risk)
        result = await run_process(argv, cwd=workspace, timeout_s=timeout_s, grace_s=grace_s,
                                   env=safe_environment(env), cancel=cancel, stdin_data=permit.stdin)
        self._record(permit, sandboxed, exit_code=result.exit_code, seconds=round(result.duration_s, 3),
                     timed_out=result.timed_out, cancelled=result.cancelled)
        return result

    async def start(self, permit: Permit, *, risk: str, env: Mapping[str, str] | None = None) -> LiveProcess:
        """Start a permitted long-lived process with pipes; `stop()` it (or `close()` the door)."""
        permit, argv, workspace, sandboxed = self._admit(permit, risk)
        # `env` is the caller's own configuration (a server's token), added after the filter.
        environment = {**safe_environment(), **(env or {})}
        process = await start_process(argv, cwd=workspace, env=environment)
        self._live.add(process)
        self._record(permit, sandboxed, started=True)

        async def forget() -> None:
            code = await process.wait()
            self._live.discard(process)
            self._record(permit, sandboxed, exit_code=code, stopped=True)

        process.watcher = asyncio.ensure_future(forget())
        return process

    async def close(self) -> None:
        """Stop every long-lived process still running (she is quitting)."""
        await asyncio.gather(*(p.stop() for p in list(self._live)), return_exceptions=True)

    def _record(self, permit: Permit, sandboxed: bool, **outcome: object) -> None:
        audit = self._audit()
        if audit is not None:
            audit.record_run(permit.shown, permit.tool, sandboxed=sandboxed, network=permit.network,
                             how=permit.how, **outcome)
