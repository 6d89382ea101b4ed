"""The one door a process goes through: a ticket from the gate, the tool's RISK, the sandbox.

The gate issues a `Permit` with every allowed verdict: exactly what will run (argv and any
stdin), what it may touch (`access`: the workspace read-only or writable, decided by how it
was allowed; `network`: the internet), the content of every workspace file it runs as it
was approved (`pins`), and a one-time ticket. `ProcessDoor` starts a process only for a
permit it issued and has not used yet, only for a tool whose RISK is `exec`, and only inside
the bubblewrap sandbox (or, where the sandbox cannot run, when the user switched on "Run
commands without a sandbox"). A pinned file is read once (admission.py), checked against its
pin, and that very content is what the sandbox shows at its path. Every start and its outcome
is written to the audit log.

The still workspace (consent/still.py): a permit from a card carries the card's hold, released
when its run ends (or, never run, after HOLD_LAPSE_S); any other process that may write waits
while a card holds the workspace, is refused with a sentence past its own time, and once
running is stopped by the kernel for as long as a later card holds it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path

from companion.paths import code_paths
from companion.safety.consent.approval import ACCESS_READ, ACCESS_WRITE, AuditLog
from companion.safety.consent.still import Held, Stilled, StillWorkspace
from companion.safety.network.outbound import OutboundError
from companion.safety.sandbox._runner import (
    KILL_GRACE_S,
    LiveProcess,
    RunResult,
    run_process,
    safe_environment,
    start_process,
)
from companion.safety.sandbox.admission import Admitted, discard, prepare
from companion.safety.sandbox.cgroup import CallCgroup
from companion.safety.sandbox.freeze import freeze_tree, thaw
from companion.safety.sandbox.limits import Limits, ProcessCount, limit_sentence
from companion.safety.sandbox.permit import Permit, ProcessRefused

__all__ = ["ACCESS_READ", "ACCESS_WRITE", "LiveProcess", "Permit", "ProcessDoor", "ProcessRefused",
           "RunResult"]

_LIMIT_CHECK_S = 0.05
HOLD_LAPSE_S = 5.0
"""A card's yes not run within this lets the workspace go (and the permit lapses)."""
SERVER_START_WAIT_S = 120.0
"""How long a server that may write waits to start while a card holds the workspace."""


class ProcessDoor:
    """Issues permits and honours each one once; keeps the long-lived processes it started."""

    def __init__(self, workspace: Callable[[], Path], audit: Callable[[], AuditLog | None],
                 hidden: tuple[Path, ...] = (), limits: Limits | None = None,
                 read_only: tuple[Path, ...] | None = None, still: StillWorkspace | None = None) -> None:
        self._workspace = workspace
        self.still = still or StillWorkspace()
        """Held from a card to the end of its run: nothing else of hers writes meanwhile."""
        self._audit = audit
        self.hidden = hidden
        """Her own folders (config, data) hidden inside the sandbox besides the homes."""
        self.read_only = code_paths() if read_only is None else read_only
        """Her own code (package, virtual environment): never writable inside, even in the workspace."""
        self.limits = limits or Limits()
        """What one call may use (processes, memory, file size, CPU time)."""
        self._tickets: dict[str, Permit] = {}
        self._live: set[LiveProcess] = set()

    def issue(self, argv: tuple[str, ...], shown: str, tool: str, *, stdin: bytes | None,
              network: bool, how: str, access: str, pins: Mapping[str, str] | None = None,
              contents: Mapping[str, tuple[bytes, int]] | None = None,
              visible: tuple[str, ...] = (), hold: Held | None = None) -> Permit:
        """A one-time permit; `access` is decided by the caller every time (no default).
        `hold`: the card's hold, handed to this run (released when it ends)."""
        if access not in (ACCESS_READ, ACCESS_WRITE):
            raise ValueError(f"access must be {ACCESS_READ!r} or {ACCESS_WRITE!r}, not {access!r}")
        permit = Permit(argv, shown, tool, stdin, network, how, secrets.token_hex(16), access,
                        dict(pins or {}), dict(contents or {}), tuple(visible), hold)
        self._tickets[permit.ticket] = permit
        if hold is not None:
            # A yes nobody runs must not keep her writers waiting for ever.
            asyncio.get_running_loop().call_later(HOLD_LAPSE_S, self._lapse, permit)
        return permit

    def _lapse(self, permit: Permit) -> None:
        if self._tickets.pop(permit.ticket, None) is not None and permit.hold is not None:
            permit.hold.release_soon()

    async def _wait_to_write(self, permit: Permit, within_s: float) -> bool:
        """A process that may write and is not the run a card was held for waits for the
        workspace to be hers; True when it counts as a writer starting (pair with still.leave)."""
        if permit.access != ACCESS_WRITE or permit.hold is not None:
            return False
        try:
            await self.still.enter("start it", within_s=within_s)
        except Stilled as exc:
            self._tickets.pop(permit.ticket, None)
            self._record(permit, True, refused="still")
            raise ProcessRefused("still", exc.sentence) from None
        return True

    async def _admit(self, permit: object, risk: str) -> Admitted:
        """Check everything before anything starts; the sandbox is prepared off the event loop
        (it starts a process to make its user namespace and reads files)."""
        if risk != "exec":
            raise ProcessRefused("risk", f"A tool with RISK {risk!r} may not start programs; only exec tools can.")
        issued = self._tickets.get(permit.ticket) if isinstance(permit, Permit) else None
        # The ticket must be one it issued, for exactly this permit (argv, stdin, network, access, pins).
        if issued is None or issued != permit:
            if permit.hold is not None:
                await permit.hold.release()
            raise ProcessRefused("no_permit", "That wasn't approved by the gate, so I won't run it.")
        del self._tickets[permit.ticket]  # once
        if permit.hold is not None and not permit.hold.current:
            raise ProcessRefused("lapsed", "Too long passed between your yes and the run, so I didn't run "
                                 "it; it needs your OK again.")
        work = asyncio.ensure_future(asyncio.to_thread(self._prepare, permit))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            work.add_done_callback(discard)  # prepared after all: give its descriptors back
            raise

    def _prepare(self, permit: Permit) -> Admitted:
        return prepare(permit, self._workspace(), hidden=self.hidden, read_only=self.read_only,
                       limits=self.limits)

    async def run(self, permit: Permit, *, risk: str, timeout_s: float,
                  cancel: asyncio.Event | None = None, grace_s: float = KILL_GRACE_S,
                  env: Mapping[str, str] | None = None) -> RunResult:
        """Run a permitted command to its end (time limit, output cap, cancel, resource limits)
        inside the sandbox; a limit that stopped it is said in `RunResult.limit`."""
        starting = await self._wait_to_write(permit, timeout_s) if risk == "exec" else False
        ended: Callable[[], None] | None = None
        try:
            admitted = await self._admit(permit, risk)
        except BaseException:
            await self._ended(permit, starting, None)
            raise
        prepared = admitted.prepared
        stop = asyncio.Event()  # the user's cancel, or a limit reached
        watchers = [asyncio.ensure_future(_relay(cancel, stop))] if cancel is not None else []
        if prepared is not None and prepared.cap is not None:
            watchers.append(asyncio.ensure_future(_watch_cap(prepared.cap, stop)))
        outbound = prepared.outbound if prepared is not None else None
        cap = prepared.cap if prepared is not None else None

        async def started(pid: int) -> None:
            nonlocal starting, ended
            if starting:  # registered before any card can hold: from now on it is stopped by one
                ended = self.still.running(_freezer(pid))
                starting = False
                await self.still.leave()
            if isinstance(cap, ProcessCount):
                cap.leader = pid
            if outbound is not None:
                await outbound.attach()

        too_many = out_of_memory = False
        try:
            result = await run_process(
                admitted.argv, cwd=admitted.workspace, timeout_s=timeout_s, grace_s=grace_s,
                env=safe_environment(env), cancel=stop, stdin_data=permit.stdin,
                pass_fds=prepared.hand_over() if prepared is not None else (),
                started=started if cap is not None or outbound is not None or starting else None)
        except OutboundError as exc:
            self._record(permit, True, failed=str(exc))
            raise ProcessRefused("network", str(exc)) from exc
        finally:
            await self._ended(permit, starting, ended)
            for watcher in watchers:
                watcher.cancel()
            if prepared is not None:
                too_many = prepared.cap is not None and prepared.cap.hit()
                out_of_memory = isinstance(prepared.cap, CallCgroup) and prepared.cap.oom_killed()
                await prepared.release()
        user_cancelled = cancel is not None and cancel.is_set()
        if prepared is not None and not user_cancelled:
            sentence = limit_sentence(result.exit_code, result.output, self.limits,
                                      too_many_processes=too_many, out_of_memory=out_of_memory)
            if sentence:
                # Stopped by a limit is a failure of the command, not the user's cancel.
                result = replace(result, limit=sentence, cancelled=False)
        self._record(permit, prepared is not None, exit_code=result.exit_code,
                     seconds=round(result.duration_s, 3), timed_out=result.timed_out,
                     cancelled=user_cancelled, limit=result.limit or None,
                     # Who it was on the host (identity.py), and a note when that is root.
                     host_uid=prepared.host_uid if prepared is not None else None,
                     identity_note=(prepared.note or None) if prepared is not None else None)
        return result

    async def start(self, permit: Permit, *, risk: str, env: Mapping[str, str] | None = None) -> LiveProcess:
        """Start a permitted long-lived process with pipes; `stop()` it (or `close()` the door)."""
        starting = await self._wait_to_write(permit, SERVER_START_WAIT_S) if risk == "exec" else False
        ended: Callable[[], None] | None = None
        try:
            admitted = await self._admit(permit, risk)
        except BaseException:
            await self._ended(permit, starting, None)
            raise
        prepared = admitted.prepared
        # `env` is the caller's own configuration (a server's token), added after the filter.
        environment = {**safe_environment(), **(env or {})}
        process: LiveProcess | None = None
        try:
            try:
                process = await start_process(admitted.argv, cwd=admitted.workspace, env=environment,
                                              pass_fds=prepared.hand_over() if prepared is not None else ())
            finally:
                if starting:  # registered before any card can hold: from now on it is stopped by one
                    ended = self.still.running(_freezer(process.pid)) if process is not None else None
                    starting = False
                    await self.still.leave()
            if prepared is not None and prepared.outbound is not None:
                try:
                    await prepared.outbound.attach()
                except OutboundError as exc:
                    await process.stop(grace_s=0.5)
                    raise ProcessRefused("network", str(exc)) from exc
        except BaseException:
            if ended is not None:
                ended()
            if prepared is not None:
                await prepared.release()
            raise
        assert process is not None
        process.visible = permit.visible
        self._live.add(process)
        self._record(permit, prepared is not None, started=True)

        async def forget() -> None:
            code = await process.wait()
            if ended is not None:
                ended()
            self._live.discard(process)
            if prepared is not None:
                await prepared.release()
            self._record(permit, prepared is not None, exit_code=code, stopped=True)

        process.watcher = asyncio.ensure_future(forget())
        return process

    async def close(self) -> None:
        """Stop every long-lived process still running (she is quitting)."""
        await asyncio.gather(*(p.stop() for p in list(self._live)), return_exceptions=True)

    async def _ended(self, permit: Permit, starting: bool, ended: Callable[[], None] | None) -> None:
        """A run is over (or never started): its writer's place, its registration, its card's hold."""
        if starting:
            await self.still.leave()
        if ended is not None:
            ended()
        if permit.hold is not None:
            await permit.hold.release()

    def _record(self, permit: Permit, sandboxed: bool, **outcome: object) -> None:
        audit = self._audit()
        if audit is not None:
            audit.record_run(permit.shown, permit.tool, sandboxed=sandboxed, network=permit.network,
                             access=permit.access, how=permit.how,
                             **{k: v for k, v in outcome.items() if v is not None})


def _freezer(leader: int) -> Callable[[], Awaitable[Callable[[], Awaitable[None]]]]:
    """How a hold stops the sandbox under `leader` (every process of it) and lets it go on."""
    async def freeze() -> Callable[[], Awaitable[None]]:
        stopped = await asyncio.to_thread(freeze_tree, leader)

        async def go_on() -> None:
            thaw(stopped)
        return go_on
    return freeze


async def _relay(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


async def _watch_cap(cap: CallCgroup | ProcessCount, stop: asyncio.Event) -> None:
    # The cgroup gives no event to wait on (v1): look every 50 ms; cheap reads of tiny files.
    # Counting a namespace's processes reads all of /proc: off the loop.
    while not stop.is_set():
        await asyncio.sleep(_LIMIT_CHECK_S)
        try:
            if isinstance(cap, CallCgroup):
                hit = cap.hit() or cap.oom_killed()
            else:
                hit = await asyncio.to_thread(cap.hit)
        except OSError:
            hit = False
        if hit:
            stop.set()
