"""The approval gate: the one door every command (and every piece of code) passes before it runs.

Decision order for a command line: a saved grant for this exact line → a saved grant for its
family (the first word) → auto-safe → ask the user → deny. Lines that always ask skip the
grants and can never be saved. Silence is never consent: an unanswered question expires.

Tools reach the gate as `ctx.services["gate"]`:

    verdict = await gate.review(command, tool="shell", channel=ctx.channel)
    if not verdict.allowed:
        return verdict.sentence

The window answers approval cards with `gate.answer(request_id, "approved", always=False)`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from companion.events import ApprovalNeeded, ApprovalResolved, EventBus
from companion.safety.approval import (
    TEXT_EXPIRY_S,
    VOICE_EXPIRY_S,
    Answer,
    ApprovalRequest,
    Approver,
    AuditLog,
    Decision,
    UnavailableApprover,
)
from companion.safety.grants import GrantError, GrantStore
from companion.safety.rules import review_line

__all__ = ["CODE_FAMILY", "Gate", "Precheck", "Verdict", "build_gate"]

CODE_FAMILY = "execute_code"
"""The family name a grant uses to let harmless Python from execute_code run without asking."""

Hold = Callable[[float], None]

REFUSALS = {
    Decision.DECLINED: "You said no, so I didn't run it.",
    Decision.EXPIRED: "Nobody answered in time, so I didn't run it.",
    Decision.UNAVAILABLE: "There's no one here to approve it, so I didn't run it.",
}


@dataclass(frozen=True)
class Precheck:
    """What the gate would do before asking anyone."""

    approve: bool
    how: str
    """"line grant", "family grant", "auto-safe", or "ask"."""
    reason: str
    saveable: bool


@dataclass(frozen=True)
class Verdict:
    """How a request ended. Only `allowed` verdicts may run anything."""

    allowed: bool
    decision: Decision
    how: str
    sentence: str = ""
    """For a refusal: what to tell the user and the model."""


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
    ) -> None:
        self.workspace = Path(workspace)
        self.voice_expiry_s = voice_expiry_s
        self.text_expiry_s = text_expiry_s
        self.grants = grants
        self.approver: Approver = approver or UnavailableApprover()
        """Who is asked: the window's CardApprover, chat's TerminalApprover, or nobody."""
        self.bus = bus
        self.audit = audit
        self._asking: asyncio.Lock | None = None

    # --- deciding ---------------------------------------------------------------------
    def precheck(self, command: str) -> Precheck:
        """The decision for `command` up to (not including) asking the user."""
        line = command.strip()
        review = review_line(line, self.workspace)
        if review.danger:
            return Precheck(False, "ask", review.danger, saveable=False)
        if self.grants.has_line(line):
            return Precheck(True, "line grant", "you said always for this exact line", True)
        if self.grants.has_family(review.family):
            return Precheck(True, "family grant", f"you said always for {review.family}", True)
        if review.auto_safe:
            return Precheck(True, "auto-safe", review.note, True)
        return Precheck(False, "ask", f"I need your OK because {review.note}.", saveable=True)

    def precheck_code(self, code: str, findings: list[str]) -> Precheck:
        """Like precheck, for Python code: risky code always asks, even with the family granted."""
        if findings:
            return Precheck(False, "ask", f"That code {'; '.join(findings)}.", saveable=False)
        if self.grants.has_line(code):
            return Precheck(True, "line grant", "you said always for this exact code", True)
        if self.grants.has_family(CODE_FAMILY):
            return Precheck(True, "family grant", "you said always for harmless code", True)
        return Precheck(False, "ask", "I need your OK to run code. \"Always\" lets code that touches no "
                        "files, programs, network or secrets run without asking.", saveable=True)

    async def review(self, command: str, *, tool: str = "shell", channel: str = "text",
                     timeout_s: float | None = None, hold: Hold | None = None) -> Verdict:
        """Decide whether `command` may run, asking the user when the rules say so.

        `timeout_s` overrides the card's expiry (60 s on voice, 180 s typed); `hold` (the
        tool's ctx.hold_budget) keeps the time spent asking off the tool's budget.
        """
        line = command.strip()
        return await self._finish(line, self.precheck(line), tool, channel, timeout_s, hold)

    async def review_code(self, code: str, findings: list[str], *, channel: str = "text",
                          timeout_s: float | None = None, hold: Hold | None = None) -> Verdict:
        """Decide whether Python `code` (with its static-scan `findings`) may run."""
        return await self._finish(code, self.precheck_code(code, findings), "execute_code",
                                  channel, timeout_s, hold)

    async def _finish(self, command: str, pre: Precheck, tool: str, channel: str,
                      timeout_s: float | None, hold: Hold | None) -> Verdict:
        if pre.approve:
            self._record(command, tool, Decision.APPROVED, pre.how)
            return Verdict(True, Decision.APPROVED, pre.how)
        if timeout_s is None:
            timeout_s = self.voice_expiry_s if str(channel) == "voice" else self.text_expiry_s
        request = ApprovalRequest(command, pre.reason, pre.saveable, timeout_s, tool)
        if hold is not None:
            hold(timeout_s + 1.0)
        started = time.monotonic()
        try:
            answer = await self._ask(request)
        except asyncio.CancelledError:
            # The turn was stopped mid-question: the question lapses (never a yes or a no).
            self._record(command, tool, Decision.EXPIRED, "withdrawn: the turn was stopped")
            raise
        if hold is not None:
            # Give back what the question did not use: only the real wait is excused.
            hold(-max(0.0, timeout_s + 1.0 - (time.monotonic() - started)))
        note = ""
        if answer.decision is Decision.APPROVED and answer.always and pre.saveable:
            try:
                # For code, "always" means harmless code in general: the same snippet rarely returns.
                if tool == "execute_code":
                    self.grants.add_family(CODE_FAMILY)
                else:
                    self.grants.add_line(command)
                note = " (saved)"
            except GrantError:
                note = " (not saveable)"
        self._record(command, tool, answer.decision, "asked" + note)
        if answer.decision is Decision.APPROVED:
            return Verdict(True, Decision.APPROVED, "asked")
        return Verdict(False, answer.decision, "asked", REFUSALS[answer.decision])

    async def _ask(self, request: ApprovalRequest) -> Answer:
        if self._asking is None:
            self._asking = asyncio.Lock()
        # One question at a time: two cards racing for one "yes" would be ambiguous.
        async with self._asking:
            if self.bus is not None:
                self.bus.emit(ApprovalNeeded(request.request_id, request.command, request.reason,
                                             request.saveable, request.timeout_s))
            try:
                answer = await self.approver.ask(request)
            except (OSError, RuntimeError, ValueError):
                answer = Answer(Decision.UNAVAILABLE)
            except asyncio.CancelledError:
                if self.bus is not None:  # close the card
                    self.bus.emit(ApprovalResolved(request.request_id, Decision.EXPIRED.value))
                raise
            if not isinstance(answer, Answer):
                answer = Answer(Decision.UNAVAILABLE)
            if self.bus is not None:
                self.bus.emit(ApprovalResolved(request.request_id, answer.decision.value))
            return answer

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
               approver: Approver | None = None) -> Gate:
    """The gate a running companion uses: grants in `config_dir_file` (approvals.toml), audit in data_dir."""
    return Gate(workspace, GrantStore(config_dir_file), approver=approver, bus=bus,
                audit=AuditLog(Path(data_dir) / "approvals.log"))
