"""Asking the user: requests, the four ways a request ends, approvers, and the audit log.

Every request ends as approved, declined, expired or unavailable. Expired and unavailable
both mean "do not run", and are recorded as themselves, never as a yes or a no.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Protocol

__all__ = [
    "ACCESS_READ",
    "ACCESS_WRITE",
    "Answer",
    "ApprovalRequest",
    "Approver",
    "AuditLog",
    "CardApprover",
    "Decision",
    "UnavailableApprover",
    "VOICE_EXPIRY_S",
    "TEXT_EXPIRY_S",
    "access_sentence",
]

log = logging.getLogger(__name__)

VOICE_EXPIRY_S = 60.0
"""How long a card waits for an answer on a voice turn."""
TEXT_EXPIRY_S = 180.0
"""How long a card waits on a typed turn."""
ACCESS_READ = "read"
"""The workspace is mounted read-only for the process."""
ACCESS_WRITE = "write"
"""The process may change files in the workspace."""


def access_sentence(access: str, network: bool) -> str:
    """What a yes lets the process touch, in words for the card and the terminal."""
    if access == ACCESS_READ:
        reach = "It can read the workspace but not change it"
    elif access == ACCESS_WRITE:
        reach = "It can change files in the workspace"
    else:
        return ""
    return reach + (", and it can reach the internet." if network else "; it has no internet.")


class Decision(StrEnum):
    APPROVED = "approved"
    DECLINED = "declined"
    EXPIRED = "expired"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class ApprovalRequest:
    """One question to the user: may this command (or code) run?"""

    command: str
    reason: str
    """Why she asks, in one sentence (e.g. "That deletes folders and everything in them.")."""
    saveable: bool
    """Whether "always" may be offered (never for lines that always ask)."""
    timeout_s: float
    tool: str = "shell"
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    access: str = ""
    """What a yes lets it touch: ACCESS_READ, ACCESS_WRITE, or "" (no process starts: an MCP call)."""
    network: bool = False
    """A yes also gives it the internet (the card says so)."""
    once_only: str = ""
    """Why "always" is not offered for a line that is otherwise allowed once (shown on the card)."""


@dataclass(frozen=True)
class Answer:
    decision: Decision
    always: bool = False
    """The user chose "always": remember this exact line (only honoured when saveable)."""


class Approver(Protocol):
    """Something that can put a request to the user and wait (at most timeout_s) for an answer."""

    async def ask(self, request: ApprovalRequest) -> Answer: ...


class UnavailableApprover:
    """Nobody to ask (no window, no terminal): every request ends `unavailable`."""

    async def ask(self, request: ApprovalRequest) -> Answer:
        return Answer(Decision.UNAVAILABLE)


class CardApprover:
    """Waits for an answer given later through `answer(request_id, ...)`, e.g. by the window's card.

    The gate has already emitted ApprovalNeeded; this only holds the pending question open
    until it is answered or its time runs out.
    """

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[Answer]] = {}
        self._requests: dict[str, ApprovalRequest] = {}

    async def ask(self, request: ApprovalRequest) -> Answer:
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._pending[request.request_id] = future
        self._requests[request.request_id] = request
        try:
            return await asyncio.wait_for(future, timeout=request.timeout_s)
        except TimeoutError:
            return Answer(Decision.EXPIRED)
        finally:
            self._pending.pop(request.request_id, None)
            self._requests.pop(request.request_id, None)

    def request(self, request_id: str) -> ApprovalRequest | None:
        """The pending request (a spoken answer checks what it would approve)."""
        return self._requests.get(request_id)

    def answer(self, request_id: str, decision: Decision | str, *, always: bool = False) -> bool:
        """Resolve a pending request; False when it is unknown or already over."""
        future = self._pending.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(Answer(Decision(decision), always))
        return True

    def pending(self) -> list[str]:
        return list(self._pending)


class AuditLog:
    """Appends one JSON line per finished request to approvals.log in the data folder."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def record(self, command: str, tool: str, decision: str, how: str) -> None:
        """Append one decision: approved | declined | expired | unavailable, and how it was reached."""
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
            "tool": tool,
            "command": command,
            "decision": decision,
            "how": how,
        }
        self._append(entry)

    def record_run(self, command: str, tool: str, **outcome: object) -> None:
        """Append what happened to a process the gate let through (exit code, sandboxed, network…)."""
        self._append({"time": datetime.now(UTC).isoformat(timespec="seconds"), "tool": tool,
                      "command": command, "ran": outcome})

    def _append(self, entry: dict) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
        except OSError:
            log.warning("could not write the approvals audit log %s", self.path, exc_info=True)

    def entries(self) -> list[dict]:
        """The decisions, oldest first."""
        return [entry for entry in self._all() if "decision" in entry]

    def runs(self) -> list[dict]:
        """The outcomes of the processes that ran, oldest first."""
        return [entry for entry in self._all() if "ran" in entry]

    def _all(self) -> list[dict]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
