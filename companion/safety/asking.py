"""Putting the gate's question to the user: one card at a time, asked again while what it runs changes.

The gate decides whether to ask (decision.py) and what an answer issues; this module is the
asking itself. One question at a time (two cards racing for one "yes" would be ambiguous); the
time spent waiting is kept off the tool's budget; a stopped turn withdraws its question; an
approver that fails is nobody there. The workspace files a line runs are read as the question is
put and hashed again after a yes: a change asks again, up to MAX_REASKS times, and what can't
be known ahead (pins.py) is said on the card and never saved.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from companion.events import ApprovalNeeded, ApprovalResolved, EventBus
from companion.safety.command_line.pins import Taken
from companion.safety.consent.approval import Answer, ApprovalRequest, Approver, Decision
from companion.safety.decision import Precheck, changed_files

__all__ = ["CANT_TELL", "MAX_REASKS", "Asked", "Asker", "Fingerprinter", "Hold", "Reader"]

Hold = Callable[[float], None]
Reader = Callable[[str, Path], Taken]
Fingerprinter = Callable[[str, Path], dict[str, str]]
Record = Callable[[str, str, Decision, str], None]

MAX_REASKS = 3
"""How often a question is put again because a file it runs changed while it was open."""

CANT_TELL = "I can't tell everything this runs"
"""Said on a card whose line runs what can't all be known ahead (pins.py); never saveable."""


@dataclass(frozen=True)
class Asked:
    """How a question ended: the answer, and what was shown when it was given."""

    answer: Answer
    taken: Taken | None
    """The workspace files the line runs, as read for the question that was answered."""
    saveable: bool
    """Whether that question offered "always"."""


class Asker:
    """Puts the gate's questions; reads the gate's approver, bus and workspace at each question."""

    def __init__(self, workspace: Callable[[], Path], approver: Callable[[], Approver],
                 bus: Callable[[], EventBus | None], record: Record) -> None:
        self._workspace = workspace
        self._approver = approver
        self._bus = bus
        self._record = record
        self._asking: asyncio.Lock | None = None

    async def ask(self, command: str, pre: Precheck, tool: str, timeout_s: float, hold: Hold | None, *,
                  access: str, network: bool, reader: tuple[Reader, Fingerprinter] | None) -> Asked:
        """Ask about `command`; `reader`: how the workspace files it runs are read and hashed
        (None: none are)."""
        # What the line runs is read as the question is put: that content is what runs if the
        # answer is yes, whatever the files become meanwhile.
        taken = await asyncio.to_thread(reader[0], command, self._workspace()) if reader is not None else None
        reason, saveable, once_only = _cant_tell(pre.reason, pre.saveable, pre.once_only, taken)
        for _ in range(MAX_REASKS + 1):
            request = ApprovalRequest(command, reason, saveable, timeout_s, tool, access=access,
                                      network=network, once_only=once_only)
            answer = await self._ask_holding(request, command, tool, hold)
            if answer.decision is not Decision.APPROVED or taken is None:
                break
            assert reader is not None
            changed = changed_files(taken.hashes, await asyncio.to_thread(reader[1], command, self._workspace()))
            if not changed:
                break
            taken = await asyncio.to_thread(reader[0], command, self._workspace())
            reason, saveable, once_only = _cant_tell(
                f"{changed} changed while I was asking, so I need your OK again for what it is now.",
                pre.saveable, pre.once_only, taken)
        else:
            answer = Answer(Decision.DECLINED)  # it kept changing under the question
        return Asked(answer, taken, saveable)

    async def _ask_holding(self, request: ApprovalRequest, command: str, tool: str,
                           hold: Hold | None) -> Answer:
        """Ask, keeping the time spent waiting off the tool's budget."""
        if hold is not None:
            hold(request.timeout_s + 1.0)
        started = time.monotonic()
        try:
            answer = await self._put(request)
        except asyncio.CancelledError:
            # The turn was stopped mid-question: the question lapses (never a yes or a no).
            self._record(command, tool, Decision.EXPIRED, "withdrawn: the turn was stopped")
            raise
        if hold is not None:
            # Give back what the question did not use: only the real wait is excused.
            hold(-max(0.0, request.timeout_s + 1.0 - (time.monotonic() - started)))
        return answer

    async def _put(self, request: ApprovalRequest) -> Answer:
        if self._asking is None:
            self._asking = asyncio.Lock()
        # One question at a time: two cards racing for one "yes" would be ambiguous. An approver
        # that queues questions itself (the terminal's: one shown, the rest counted on screen)
        # gets them all at once, so a waiting question is visible; a lock of its own never waits.
        queues = getattr(self._approver(), "queues_questions", False) is True
        async with asyncio.Lock() if queues else self._asking:
            approver, bus = self._approver(), self._bus()
            if bus is not None:
                bus.emit(ApprovalNeeded(request.request_id, request.command, request.reason,
                                        request.saveable, request.timeout_s, request.access,
                                        request.network, request.once_only, request.tool))
            try:
                answer = await approver.ask(request)
            except (OSError, RuntimeError, ValueError):
                answer = Answer(Decision.UNAVAILABLE)
            except asyncio.CancelledError:
                if bus is not None:  # close the card
                    bus.emit(ApprovalResolved(request.request_id, Decision.EXPIRED.value))
                raise
            if not isinstance(answer, Answer):
                answer = Answer(Decision.UNAVAILABLE)
            if bus is not None:
                bus.emit(ApprovalResolved(request.request_id, answer.decision.value))
            return answer


def _cant_tell(reason: str, saveable: bool, once_only: str, taken: Taken | None) -> tuple[str, bool, str]:
    """The card's reason, saveability and once-only note, with what can't be known said."""
    if taken is None or not taken.unknown:
        return reason, saveable, once_only
    if not saveable and not once_only:
        # It can destroy data: it stays so (a click, or the explicit phrase aloud; answers.py).
        return f"{reason} {CANT_TELL} ({'; '.join(taken.unknown)}).", False, ""
    return (f"{reason} {CANT_TELL} ({'; '.join(taken.unknown)}).", False,
            f"{once_only} {CANT_TELL} either." if once_only else f"{CANT_TELL}, so I can only allow it once.")
