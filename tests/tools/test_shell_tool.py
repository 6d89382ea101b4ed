"""The shell tool: every command passes the gate, then runs sandboxed in the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.safety.consent.approval import (
    Answer,
    ApprovalRequest,
    AuditLog,
    CardApprover,
    Decision,
)
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore
from companion.tools.action import shell
from companion.tools.context import Channel, ToolContext


class ScriptedApprover:
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.answers.pop(0)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "something" / "deep").mkdir(parents=True)
    (ws / "something" / "deep" / "file.txt").write_text("keep me\n")
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    return ws


def context(workspace: Path, gate: Gate | None, budget_s: float = 30.0) -> ToolContext:
    services = {"gate": gate} if gate is not None else {}
    return ToolContext(workspace=workspace, data_dir=workspace.parent / "data", budget_s=budget_s,
                       channel=Channel.TEXT, services=services, tool="shell", risk=shell.RISK)


def gate_for(workspace: Path, approver=None) -> Gate:
    return Gate(workspace, GrantStore(workspace.parent / "approvals.toml"), approver=approver,
                audit=AuditLog(workspace.parent / "approvals.log"), text_expiry_s=0.05)


async def test_a_read_only_command_runs_at_once_in_the_workspace(workspace: Path) -> None:
    approver = ScriptedApprover()
    ctx = context(workspace, gate_for(workspace, approver))
    text = await shell.execute({"command": "cat notes.txt"}, ctx)
    assert text.startswith("alpha\nbeta") and "[exit 0]" in text
    assert approver.asked == [] and not ctx.failed and not ctx.refused


@pytest.mark.parametrize("answer", [Answer(Decision.DECLINED), Answer(Decision.EXPIRED),
                                    Answer(Decision.UNAVAILABLE)])
async def test_rm_rf_asks_first_and_runs_nothing_unless_approved(workspace: Path, answer: Answer) -> None:
    approver = ScriptedApprover(answer)
    ctx = context(workspace, gate_for(workspace, approver))
    text = await shell.execute({"command": "rm -rf something"}, ctx)
    assert approver.asked[0].command == "rm -rf something" and approver.asked[0].saveable is False
    assert (workspace / "something" / "deep" / "file.txt").exists()
    assert ctx.refused and text == ctx.refusal


async def test_an_unanswered_card_runs_nothing(workspace: Path) -> None:
    gate = gate_for(workspace, CardApprover())
    ctx = context(workspace, gate)
    text = await shell.execute({"command": "rm -rf something"}, ctx)
    assert (workspace / "something").exists()
    assert "Nobody answered" in text
    assert gate.audit.entries()[-1]["decision"] == "expired"


async def test_an_approved_command_runs(workspace: Path) -> None:
    ctx = context(workspace, gate_for(workspace, ScriptedApprover(Answer(Decision.APPROVED))))
    text = await shell.execute({"command": "rm -rf something && echo gone"}, ctx)
    assert "gone" in text and not (workspace / "something").exists()


async def test_without_a_gate_nothing_runs(workspace: Path) -> None:
    ctx = context(workspace, None)
    text = await shell.execute({"command": "touch made-it"}, ctx)
    assert ctx.refused and "no approval gate" in text
    assert not (workspace / "made-it").exists()


async def test_the_timeout_argument_stops_a_long_command(workspace: Path) -> None:
    ctx = context(workspace, gate_for(workspace, ScriptedApprover(Answer(Decision.APPROVED))))
    text = await shell.execute({"command": "sleep 30", "timeout": 1}, ctx)
    assert ctx.failed and "ran out of time after 1 s" in text and "exit 124" in text


async def test_a_timeout_above_the_turn_budget_is_lowered(workspace: Path) -> None:
    ctx = context(workspace, gate_for(workspace), budget_s=5)
    text = await shell.execute({"command": "pwd", "timeout": 500}, ctx)
    assert str(workspace.resolve()) in text and "lowered to 5 s" in text


async def test_no_secret_reaches_a_shell_command(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    ctx = context(workspace, gate_for(workspace, ScriptedApprover(Answer(Decision.APPROVED))))
    text = await shell.execute({"command": "env"}, ctx)
    assert "sk-very-secret" not in text and "PATH=" in text


async def test_a_nonzero_exit_is_reported_not_hidden(workspace: Path) -> None:
    ctx = context(workspace, gate_for(workspace))
    text = await shell.execute({"command": "grep zeta notes.txt"}, ctx)
    assert "[exit 1]" in text and not ctx.failed


async def test_bad_arguments_get_a_sentence(workspace: Path) -> None:
    ctx = context(workspace, gate_for(workspace))
    assert "need a command" in await shell.execute({"command": "  "}, ctx)
    ctx = context(workspace, gate_for(workspace))
    assert "whole number" in await shell.execute({"command": "ls", "timeout": "soon"}, ctx)
