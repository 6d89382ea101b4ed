"""What the sandbox tests share: an approver that says yes, a gate on a fresh workspace, a tool context.

Import the fixtures into a test module: `from sandbox_support import gate_fixture, real_sandbox_fixture`
(`real_sandbox` is autouse there: those tests are about the sandbox and need it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.safety.consent.approval import Answer, ApprovalRequest, AuditLog, Decision
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore
from companion.safety.sandbox import probe
from companion.tools.context import ToolContext


class Approves:
    """Says yes (once) to everything, and remembers what it was shown."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(Decision.APPROVED)


@pytest.fixture(name="real_sandbox", autouse=True)
def real_sandbox_fixture() -> None:
    """These tests are about the sandbox itself: it must be here (bubblewrap is a system dependency)."""
    assert probe.unavailable_reason() is None, probe.unavailable_reason()


@pytest.fixture(name="gate")
def gate_fixture(tmp_path: Path) -> Gate:
    """A gate whose approver says yes, on an empty workspace `tmp_path/ws`, grants and audit beside it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Gate(workspace, GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))


def ctx_for(gate: Gate, module, budget_s: float = 60) -> ToolContext:
    """The context the runtime would give the tool `module` on a turn, with `gate` as its gate."""
    return ToolContext(workspace=gate.workspace, data_dir=gate.workspace.parent / "data", budget_s=budget_s,
                       services={"gate": gate}, tool=module.SCHEMA["name"], risk=module.RISK)
