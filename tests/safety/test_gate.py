"""The gate asking the user: how requests end, what is remembered, what is recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from companion.events import ApprovalNeeded, ApprovalResolved, EventBus
from companion.safety.consent.approval import (
    Answer,
    ApprovalRequest,
    AuditLog,
    CardApprover,
    Decision,
)
from companion.safety.gate import CODE_FAMILY, Gate
from companion.safety.grants import GrantError, GrantStore


class ScriptedApprover:
    """Answers from a list, remembering every request it was shown."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.answers.pop(0)


@pytest.fixture
def store(tmp_path: Path) -> GrantStore:
    return GrantStore(tmp_path / "config" / "approvals.toml")


def make_gate(tmp_path: Path, store: GrantStore, approver=None, bus=None) -> Gate:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return Gate(workspace, store, approver=approver, bus=bus, audit=AuditLog(tmp_path / "approvals.log"),
                text_expiry_s=0.05, voice_expiry_s=0.05)


async def test_an_unanswered_card_expires_and_is_recorded_as_expired(tmp_path: Path, store: GrantStore) -> None:
    events: list = []
    bus = EventBus()
    bus.subscribe(events.append)
    gate = make_gate(tmp_path, store, CardApprover(), bus)
    verdict = await gate.review("rm notes.txt")
    assert not verdict.allowed
    assert verdict.decision is Decision.EXPIRED
    assert "Nobody answered" in verdict.sentence
    assert [e.decision for e in events if isinstance(e, ApprovalResolved)] == ["expired"]
    assert [entry["decision"] for entry in gate.audit.entries()] == ["expired"]


async def test_with_nobody_to_ask_the_request_is_unavailable_and_denied(tmp_path: Path, store: GrantStore) -> None:
    gate = make_gate(tmp_path, store)  # no approver attached
    verdict = await gate.review("touch x")
    assert (verdict.allowed, verdict.decision) == (False, Decision.UNAVAILABLE)
    assert "no one here" in verdict.sentence
    assert gate.audit.entries()[-1]["decision"] == "unavailable"


async def test_a_card_answered_through_the_gate_approves_the_request(tmp_path: Path, store: GrantStore) -> None:
    bus = EventBus()
    gate = make_gate(tmp_path, store, CardApprover(), bus)
    gate.text_expiry_s = 30
    # The window answers when it sees the card: wait on the event, not on time.
    bus.subscribe(lambda e: isinstance(e, ApprovalNeeded)
                  and asyncio.get_running_loop().call_soon(gate.answer, e.request_id, "approved"))
    verdict = await gate.review("touch x")
    assert verdict.allowed and verdict.how == "asked"
    assert gate.answer("no-such-request", "approved") is False


async def test_a_declined_request_is_recorded_as_declined(tmp_path: Path, store: GrantStore) -> None:
    gate = make_gate(tmp_path, store, ScriptedApprover(Answer(Decision.DECLINED)))
    verdict = await gate.review("touch x")
    assert (verdict.allowed, verdict.decision) == (False, Decision.DECLINED)
    assert gate.audit.entries()[-1] == {**gate.audit.entries()[-1], "decision": "declined", "command": "touch x"}


async def test_always_saves_the_exact_line_and_it_then_runs_without_asking(tmp_path: Path, store: GrantStore) -> None:
    approver = ScriptedApprover(Answer(Decision.APPROVED, always=True))
    gate = make_gate(tmp_path, store, approver)
    assert (await gate.review("touch built.txt")).allowed
    assert (await gate.review("  touch built.txt  ")).how == "line grant"
    assert len(approver.asked) == 1
    assert GrantStore(store.path).current().lines == ("touch built.txt",)  # persisted
    assert gate.precheck("touch built.txt other.txt").how == "ask"  # only the exact line


async def test_a_dangerous_line_is_asked_every_time_and_never_saved(tmp_path: Path, store: GrantStore) -> None:
    approver = ScriptedApprover(Answer(Decision.APPROVED, always=True), Answer(Decision.DECLINED))
    gate = make_gate(tmp_path, store, approver)
    verdict = await gate.review("rm -rf build")
    assert verdict.allowed and approver.asked[0].saveable is False
    await gate.run(verdict, risk="exec", timeout_s=30)  # the workspace is held still until it has run
    assert not (await gate.review("rm -rf build")).allowed
    assert len(approver.asked) == 2
    assert store.current().lines == ()
    with pytest.raises(GrantError):
        store.add_line("sudo rm x")


@pytest.mark.parametrize("word", ["python3", "bash", "node", "env", "xargs", "ssh", "nohup", "less",
                                  "vim", "curl", "wget", "scp", "rsync", "nc", "rm", "make"])
def test_families_that_can_run_anything_cannot_be_granted(store: GrantStore, word: str) -> None:
    with pytest.raises(GrantError):
        store.add_family(word)
    with pytest.raises(GrantError):  # nor an exact line: none of their options is on the allowlist
        store.add_line(f"{word} --version")
    assert not store.has_line(f"{word} --version")


def test_a_grant_can_be_revoked_and_the_file_is_rewritten(tmp_path: Path, store: GrantStore) -> None:
    store.add_family("git")
    store.add_line("touch a.txt")
    gate = make_gate(tmp_path, store)
    assert gate.precheck("git status").approve
    assert gate.revoke("git") is True
    assert gate.revoke("git") is False
    assert not gate.precheck("git status").approve
    assert GrantStore(store.path).current().families == ()
    assert GrantStore(store.path).current().lines == ("touch a.txt",)


def test_a_broken_grants_file_is_set_aside_and_nothing_is_granted(tmp_path: Path) -> None:
    path = tmp_path / "approvals.toml"
    path.write_text("lines = [unclosed")
    store = GrantStore(path)
    assert store.current().lines == () and store.notice and "set them aside" in store.notice
    assert not path.exists()
    assert len(list(tmp_path.glob("approvals.broken-*.toml"))) == 1


async def test_harmless_code_runs_with_the_code_family_granted_but_risky_code_still_asks(
    tmp_path: Path, store: GrantStore
) -> None:
    approver = ScriptedApprover(Answer(Decision.DECLINED))
    gate = make_gate(tmp_path, store, approver)
    gate.grant_family(CODE_FAMILY)
    assert (await gate.review_code("print(1)", [])).how == "family grant"
    verdict = await gate.review_code("import os; os.remove('x')", ["deletes files (line 1)"])
    assert not verdict.allowed
    assert approver.asked[0].saveable is False and "deletes files" in approver.asked[0].reason


async def test_time_spent_asking_is_held_off_the_tool_budget(tmp_path: Path, store: GrantStore) -> None:
    moves: list[float] = []
    gate = make_gate(tmp_path, store, ScriptedApprover(Answer(Decision.APPROVED)))
    await gate.review("touch x", timeout_s=10, hold=moves.append)
    assert moves[0] == pytest.approx(11.0)
    assert 0 <= sum(moves) < 1.0  # only the real (short) wait stays excused


def test_a_grant_removed_from_the_file_by_hand_stops_applying_at_once(tmp_path: Path, store: GrantStore) -> None:
    store.add_family("git")
    gate = make_gate(tmp_path, store)
    assert gate.precheck("git status").approve
    store.path.write_text('lines = []\nfamilies = ["jq"]\n')
    assert not gate.precheck("git status").approve
    assert gate.precheck("jq . data.json").how == "family grant"


async def test_always_on_harmless_code_grants_harmless_code_in_general(tmp_path: Path, store: GrantStore) -> None:
    approver = ScriptedApprover(Answer(Decision.APPROVED, always=True))
    gate = make_gate(tmp_path, store, approver)
    assert (await gate.review_code("print(1)", [])).allowed
    assert store.current().families == (CODE_FAMILY,)
    assert (await gate.review_code("print(2)", [])).how == "family grant"
    assert gate.precheck_code("import socket", ["opens network connections (line 1)"]).how == "ask"


async def test_a_question_cut_short_by_a_stopped_turn_lapses_as_expired(tmp_path: Path, store: GrantStore) -> None:
    events: list = []
    bus = EventBus()
    bus.subscribe(events.append)
    gate = make_gate(tmp_path, store, CardApprover(), bus)
    gate.text_expiry_s = 60
    task = asyncio.ensure_future(gate.review("touch x"))
    bus.subscribe(lambda e: isinstance(e, ApprovalNeeded) and asyncio.get_running_loop().call_soon(task.cancel))
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e.decision for e in events if isinstance(e, ApprovalResolved)] == ["expired"]
    assert gate.audit.entries()[-1]["decision"] == "expired"
