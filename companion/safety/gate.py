"""The approval gate: the one door every command (and every piece of code) passes to run.

The decision before asking is decision.py's (a saved grant for this exact line → a saved grant
for its family → auto-safe → ask the user → deny); asking.py puts the question; this module
issues the permit. Lines that always ask skip the grants and can never be saved; "always" is offered only for lines the allowlist in always.py
accepts (the card says why otherwise). Silence is never consent: an unanswered question
expires. A line that needs the internet always asks, and only that answer gives it the network.
The checks run off the event loop; the workspace files a line runs are pinned when its card is
shown, checked after the answer (a change asks again), and carried by the permit. From a card
that starts a process to the end of its run, nothing else of hers writes the workspace
(consent/still.py): the card takes the hold before it reads anything, the permit carries it.

Tools reach the gate as `ctx.services["gate"]`; an allowed verdict carries a one-time permit
for exactly what was judged, and only `Gate.run` / `Gate.start` turn a permit into a process
(inside the kernel sandbox, for exec tools only):

    verdict = await gate.review(command, tool="shell", channel=ctx.channel)
    if not verdict.allowed:
        return verdict.sentence
    result = await gate.run(verdict, risk=ctx.risk, timeout_s=30, cancel=ctx.cancel)

The window answers approval cards with `gate.answer(request_id, "approved", always=False)`.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from companion.events import EventBus
from companion.paths import own_paths
from companion.safety.asking import Asker, Fingerprinter, Hold, Reader
from companion.safety.command_line import git_settings
from companion.safety.command_line.always import program_of
from companion.safety.command_line.git_pins import fingerprint, take
from companion.safety.command_line.pins import fingerprint_code, take_code
from companion.safety.consent.approval import (
    ACCESS_WRITE,
    TEXT_EXPIRY_S,
    VOICE_EXPIRY_S,
    Approver,
    AuditLog,
    Decision,
    UnavailableApprover,
)
from companion.safety.consent.still import Held, Stilled, StillWorkspace
from companion.safety.decision import (
    CODE_FAMILY,
    Precheck,
    decide_code,
    decide_line,
    decide_tool_call,
    unasked_access,
)
from companion.safety.grants import GrantError, GrantStore
from companion.safety.sandbox.door import (
    LiveProcess,
    Permit,
    ProcessDoor,
    ProcessRefused,
    RunResult,
)

__all__ = ["CODE_FAMILY", "NEEDS_INTERNET", "Gate", "Precheck", "ProcessRefused", "Verdict", "build_gate"]

NEEDS_INTERNET = "This needs the internet."
"""Said on the card of a request that asks for the network (and so is asked every time)."""

REFUSALS = {
    Decision.DECLINED: "You said no, so I didn't run it.",
    Decision.EXPIRED: "Nobody answered in time, so I didn't run it.",
    Decision.UNAVAILABLE: "There's no one here to approve it, so I didn't run it.",
}


@dataclass(frozen=True)
class Verdict:
    """How a request ended. Only `allowed` verdicts may run anything."""

    allowed: bool
    decision: Decision
    how: str
    sentence: str = ""
    """For a refusal: what to tell the user and the model."""
    permit: Permit | None = None
    """For an allowed verdict: what may run, once, through `Gate.run` or `Gate.start`."""

    @property
    def network(self) -> bool:
        """The permit shares the network (the user was just asked, and the card said so)."""
        return self.permit is not None and self.permit.network


class Gate:
    """Deny by default, ask when unsure, remember only what the rules let it remember."""

    def __init__(
        self,
        workspace: Path,
        grants: GrantStore,
        *,
        approver: Approver | None = None,
        bus: EventBus | None = None,
        audit: AuditLog | None = None,
        voice_expiry_s: float = VOICE_EXPIRY_S,
        text_expiry_s: float = TEXT_EXPIRY_S,
        hidden: tuple[Path, ...] = (),
    ) -> None:
        """`hidden`: her own folders (config, data), never visible to a sandboxed process."""
        self.workspace = Path(workspace)
        self.voice_expiry_s = voice_expiry_s
        self.text_expiry_s = text_expiry_s
        self.grants = grants
        self.approver: Approver = approver or UnavailableApprover()
        """Who is asked: the window's CardApprover, chat's TerminalApprover, or nobody."""
        self.bus = bus
        self.audit = audit
        self._asker = Asker(lambda: self.workspace, lambda: self.approver, lambda: self.bus, self._record)
        self.still = StillWorkspace()
        """From a card that starts a process to the end of its run, nothing else of hers writes."""
        self.door = ProcessDoor(lambda: self.workspace, lambda: self.audit, hidden, still=self.still)

    # --- deciding ---------------------------------------------------------------------
    def precheck(self, command: str) -> Precheck:
        """The decision for `command` up to (not including) asking the user (decision.py).

        Blocking (it reads the workspace: globs, pinned files, git's settings); `review` runs
        it off the event loop."""
        return decide_line(command, self.workspace, self.grants)

    def precheck_code(self, code: str, findings: list[str]) -> Precheck:
        """Like precheck, for Python code: risky code always asks, even with the family granted."""
        return decide_code(code, findings, self.grants)

    async def review(self, command: str, *, tool: str = "shell", channel: str = "text",
                     timeout_s: float | None = None, hold: Hold | None = None,
                     network: bool = False) -> Verdict:
        """Decide whether the bash line `command` may run, asking the user when the rules say so.

        `timeout_s` overrides the card's expiry (60 s on voice, 180 s typed); `hold` (the
        tool's ctx.hold_budget) keeps the time spent asking off the tool's budget; `network`
        asks for the internet (always asked, never saved).
        """
        line = command.strip()
        argv: tuple[str, ...] = ("bash", "--noprofile", "--norc", "-c", line)
        pre = await self._precheck_off_loop(line)
        if pre.approve and pre.how in ("line grant", "family grant") and program_of(line) == "git":
            argv = (*git_settings.neutraliser(), *argv)  # git runs no code from any settings
        return await self._finish(line, pre, tool, channel, timeout_s, hold, argv=argv,
                                  network=network, pinned=True)

    async def _precheck_off_loop(self, line: str) -> Precheck:
        """`precheck` in a worker thread: globs and file hashes never stall the event loop."""
        return await asyncio.to_thread(self.precheck, line)

    async def review_code(self, code: str, findings: list[str], *, channel: str = "text",
                          timeout_s: float | None = None, hold: Hold | None = None) -> Verdict:
        """Decide whether Python `code` (with its static-scan `findings`) may run; never with network."""
        # -E -s: ignore PYTHON* variables and the user site; the program arrives on stdin.
        argv = (sys.executable, "-E", "-s", "-")
        # It runs in the workspace, whose folder comes first on sys.path: the workspace modules it
        # imports are pinned like the files a line runs.
        return await self._finish(code, self.precheck_code(code, findings), "execute_code",
                                  channel, timeout_s, hold, argv=argv, stdin=code.encode("utf-8"),
                                  pinned=True, reader=(take_code, fingerprint_code))

    async def review_argv(self, argv: Sequence[str], *, tool: str, channel: str = "text",
                          timeout_s: float | None = None, hold: Hold | None = None,
                          network: bool = False) -> Verdict:
        """Decide whether the program `argv` may run (an MCP stdio server, say), judged and
        shown as its shell-quoted line; `network` as for `review`."""
        argv = tuple(str(a) for a in argv)
        line = shlex.join(argv)
        return await self._finish(line, await self._precheck_off_loop(line), tool, channel, timeout_s,
                                  hold, argv=argv, network=network, pinned=True)

    async def review_tool_call(self, shown: str, *, server: str, tool: str, destructive: bool,
                               claims_read_only: bool = False, channel: str = "text",
                               timeout_s: float | None = None, hold: Hold | None = None) -> Verdict:
        """Decide whether a tool call of an untrusted MCP server may run (no process starts:
        the server is already running in its sandbox). The card shows `shown`. The server's
        hints only make it more cautious: a destructive tool asks every time; a read-only claim
        is shown as a claim; for any other "always" covers that tool of that server."""
        key = f"mcp:{server}/{tool}"
        pre = decide_tool_call(self.grants, server, tool, destructive=destructive, claims_read_only=claims_read_only)
        return await self._finish(shown, pre, key, channel, timeout_s, hold, argv=None, grant=key)

    def trusted_call(self, shown: str, *, server: str, tool: str) -> None:
        """Record a call of a trusted MCP server's tool: nobody is asked (the user marked the
        server trusted in Settings), but the audit log keeps it like any other decision."""
        self._record(shown, f"mcp:{server}/{tool}", Decision.APPROVED, "trusted server")

    def declared(self, argv: Sequence[str], *, tool: str, network: bool = False,
                 visible: Sequence[str] = ()) -> Verdict:
        """A program the user declared in their own settings (an MCP server): writing it there
        was the approval, so nobody is asked; it still runs only in the sandbox, with the
        network only when the declaration says so, and of the hidden folders (the home) sees
        only `visible`, read-only: its own program, environment and script."""
        argv = tuple(str(a) for a in argv)
        line = shlex.join(argv)
        self._record(line, tool, Decision.APPROVED, "declared in settings")
        # The user wrote it into her settings: it may change the workspace, like a yes on a card.
        permit = self.door.issue(argv, line, tool, stdin=None, network=network,
                                 how="declared in settings", access=ACCESS_WRITE,
                                 visible=tuple(str(p) for p in visible))
        return Verdict(True, Decision.APPROVED, "declared in settings", permit=permit)

    async def review_download(self, line: str, *, tool: str, reason: str, channel: str = "text") -> Verdict:
        """Ask before a declared server's launcher downloads its package, once, outside the
        sandbox and online (`line` is what runs; no permit: the door starts nothing). Never saved."""
        pre = Precheck(False, "ask", reason, saveable=False)
        return await self._finish(line, pre, tool, channel, None, None, argv=None, network=True)

    # --- the one door ---------------------------------------------------------------------
    async def run(self, verdict: Verdict, *, risk: str, timeout_s: float,
                  cancel: asyncio.Event | None = None, env: Mapping[str, str] | None = None) -> RunResult:
        """Run what an allowed `verdict` permits, once, in the sandbox, to its end or `timeout_s`.

        `risk` is the calling tool's RISK (ctx.risk): only `exec` tools may start programs.
        Raises ProcessRefused (with a sentence) for anything else, before anything starts.
        """
        return await self.door.run(_permit_of(verdict), risk=risk, timeout_s=timeout_s,
                                   cancel=cancel, env=env)

    async def start(self, verdict: Verdict, *, risk: str, env: Mapping[str, str] | None = None) -> LiveProcess:
        """Start what `verdict` permits as a long-lived sandboxed process with stdin/stdout pipes.

        Stop it with `await process.stop()`; `close()` stops whatever is left. `env` is added
        as given (a token the user configured for that server), after the secret filter.
        """
        return await self.door.start(_permit_of(verdict), risk=risk, env=env)

    async def close(self) -> None:
        """Stop every long-lived process the gate started."""
        await self.door.close()

    async def _finish(self, command: str, pre: Precheck, tool: str, channel: str,
                      timeout_s: float | None, hold: Hold | None, *, argv: tuple[str, ...] | None,
                      stdin: bytes | None = None, network: bool = False,
                      grant: str | None = None, pinned: bool = False,
                      reader: tuple[Reader, Fingerprinter] = (take, fingerprint)) -> Verdict:
        """Ask when `pre` says so; an approval carries a permit for `argv` (None: a decision
        that starts no process). "Always" saves `grant`, or the command itself.

        `pinned`: the workspace files the line runs are read when the question is put and
        hashed again after the answer; a change in between asks again, and the permit carries
        the content the user was asked about, which is what the sandbox shows at their paths."""
        if network:
            # Grants and auto-safe never reach the network: the user sees this very line.
            reason = pre.reason if not pre.approve else "I need your OK to go online."
            pre = Precheck(False, "ask", f"{reason} {NEEDS_INTERNET}", saveable=False)
        if pre.approve:
            self._record(command, tool, Decision.APPROVED, pre.how)
            pins = self.grants.pins_for(command) if pinned and pre.how == "line grant" else {}
            pins = {**pins, **pre.pins}
            permit = None if argv is None else self.door.issue(
                argv, command, tool, stdin=stdin, network=False, how=pre.how,
                access=unasked_access(command, pre.how), pins=pins, contents=pre.contents)
            return Verdict(True, Decision.APPROVED, pre.how, permit=permit)
        if timeout_s is None:
            timeout_s = self.voice_expiry_s if str(channel) == "voice" else self.text_expiry_s
        # From the card to the end of its run nothing else of hers writes the workspace
        # (consent/still.py); taken before anything is read for the card.
        try:
            held = await self.still.hold(within_s=timeout_s) if argv is not None else None
        except Stilled as exc:
            self._record(command, tool, Decision.EXPIRED, "not asked: an approved run still holds the workspace")
            return Verdict(False, Decision.EXPIRED, "not asked", exc.sentence)
        try:
            return await self._ask_and_issue(command, pre, tool, channel, timeout_s, hold, held, argv=argv,
                                             stdin=stdin, network=network, grant=grant,
                                             reader=reader if pinned else None)
        except BaseException:
            if held is not None:
                await held.release()
            raise

    async def _ask_and_issue(self, command: str, pre: Precheck, tool: str, channel: str, timeout_s: float,
                             hold: Hold | None, held: Held | None, *, argv: tuple[str, ...] | None,
                             stdin: bytes | None, network: bool, grant: str | None,
                             reader: tuple[Reader, Fingerprinter] | None) -> Verdict:
        """The question and its answer, with the workspace `held` still (None: nothing starts);
        `reader`: how the workspace files it runs are read and hashed (None: none are)."""
        # A process the user approves when asked may change the workspace.
        asked = await self._asker.ask(command, pre, tool, timeout_s, hold,
                                      access="" if argv is None else ACCESS_WRITE, network=network,
                                      reader=reader)
        answer, taken, saveable = asked.answer, asked.taken, asked.saveable
        pins = taken.hashes if taken is not None else {}
        note = ""
        if answer.decision is Decision.APPROVED and answer.always and saveable:
            try:
                # For code, "always" means harmless code in general: the same snippet rarely returns.
                if tool == "execute_code":
                    self.grants.add_family(CODE_FAMILY)
                elif grant is not None:
                    self.grants.add_line(grant)
                else:  # tied to the content of the workspace files the line runs, as shown
                    kept = taken.settings if taken is not None else frozenset()
                    self.grants.add_line(command, pins={k: v for k, v in pins.items() if k not in kept})
                note = " (saved)"
            except GrantError:
                note = " (not saveable)"
        self._record(command, tool, answer.decision, "asked" + note)
        if answer.decision is Decision.APPROVED:
            permit = None if argv is None else self.door.issue(
                argv, command, tool, stdin=stdin, network=network, how="asked", access=ACCESS_WRITE,
                pins=pins, contents=taken.contents if taken is not None else None, hold=held)
            return Verdict(True, Decision.APPROVED, "asked", permit=permit)
        if held is not None:
            await held.release()
        return Verdict(False, answer.decision, "asked", REFUSALS[answer.decision])

    # --- answering and remembering ------------------------------------------------------
    def answer(self, request_id: str, decision: Decision | str, *, always: bool = False) -> bool:
        """Answer a pending card (the window calls this); False when it is unknown or over."""
        answer = getattr(self.approver, "answer", None)
        if answer is None:
            return False
        return bool(answer(request_id, decision, always=always))

    def grant_family(self, word: str) -> None:
        """Remember a family; raises GrantError (with a sentence) for refused families."""
        self.grants.add_family(word)

    def revoke(self, value: str) -> bool:
        return self.grants.revoke(value)

    def _record(self, command: str, tool: str, decision: Decision, how: str) -> None:
        if self.audit is not None:
            self.audit.record(command, tool, decision.value, how)


def build_gate(workspace: Path, config_dir_file: Path, data_dir: Path, *, bus: EventBus | None = None,
               approver: Approver | None = None, also_hidden: tuple[Path, ...] = ()) -> Gate:
    """The gate a running companion uses: grants in `config_dir_file` (approvals.toml), audit in
    data_dir; her folders and `also_hidden` (a personality file kept elsewhere) hidden from commands."""
    return Gate(workspace, GrantStore(config_dir_file), approver=approver, bus=bus,
                audit=AuditLog(Path(data_dir) / "approvals.log"),
                hidden=own_paths(Path(config_dir_file).parent, Path(data_dir), *also_hidden))


def _permit_of(verdict: Verdict) -> Permit:
    if not isinstance(verdict, Verdict) or not verdict.allowed or verdict.permit is None:
        raise ProcessRefused("not_allowed", "That wasn't approved, so I won't run it.")
    return verdict.permit
