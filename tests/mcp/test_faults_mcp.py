"""An MCP server stalled, or its call stopped by the user (mid-call or while its approval is
asked): one sentence for the stall, none for the user's stop, and the server's next call works."""

from __future__ import annotations

import asyncio

import pytest
from test_mcp_tools import (
    context,
    notes_server,
    sandbox_gate,
    started_manager,
    wait_until,
)

from companion.mcp import ServerState
from companion.safety.consent.approval import Answer, Decision


async def _next_call_works(registry, workspace) -> None:
    (workspace / "n.txt").write_text("still here\n", encoding="utf-8")
    ctx = context(workspace, budget_s=20.0)
    answer = await registry.dispatchable("read_note").execute({"name": "n.txt"}, ctx)
    assert answer.strip() == "still here" and not ctx.failed


@pytest.fixture
def workspace(tmp_path):
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


async def test_a_stalled_mcp_call_is_one_sentence_and_the_servers_next_call_works(workspace):
    manager, registry = await started_manager(workspace, notes_server(trusted=True))
    try:
        before = manager.connection("mcp:notes").pid
        ctx = context(workspace, budget_s=1.5)
        answer = await asyncio.wait_for(
            registry.dispatchable("slow_echo").execute({"text": "hello", "seconds": 60}, ctx), 20)
        assert ctx.failed and answer == "The MCP server 'notes' did not answer slow_echo in time."
        assert manager.status("mcp:notes").state is ServerState.UP
        await _next_call_works(registry, workspace)
        assert manager.connection("mcp:notes").pid == before  # the same server, not a restart
    finally:
        await manager.close()


async def test_the_user_stopping_a_turn_mid_mcp_call_leaves_the_server_up_for_the_next_call(workspace):
    manager, registry = await started_manager(workspace, notes_server(trusted=True))
    try:
        ctx = context(workspace, budget_s=60.0)
        call = asyncio.ensure_future(registry.dispatchable("slow_echo").execute({"text": "hi", "seconds": 60}, ctx))
        await wait_until(lambda: (workspace / "slow_echo.started").exists())
        call.cancel()  # the user said "stop"
        with pytest.raises(asyncio.CancelledError):
            await call
        assert not ctx.failed and manager.status("mcp:notes").state is ServerState.UP
        await _next_call_works(registry, workspace)
    finally:
        await manager.close()


class HeldApprover:
    """Asks the user and waits: the question stays open until answered or withdrawn."""

    def __init__(self) -> None:
        self.asked: list = []
        self.open = asyncio.Event()
        self.withdrawn = 0
        self.decision: Decision | None = None

    async def ask(self, request):
        self.asked.append(request)
        self.open.set()
        if self.decision is not None:
            return Answer(self.decision)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.withdrawn += 1
            raise


async def test_the_user_stopping_a_turn_while_an_mcp_call_waits_for_approval_withdraws_the_question(workspace):
    approver = HeldApprover()
    gate = sandbox_gate(workspace, approver=approver)
    manager, registry = await started_manager(workspace, notes_server(), gate=gate)
    try:
        ctx = context(workspace, gate=gate, budget_s=60.0)
        call = asyncio.ensure_future(registry.dispatchable("append_note").execute(
            {"name": "n.txt", "text": "never written"}, ctx))
        await asyncio.wait_for(approver.open.wait(), 20)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert approver.withdrawn == 1 and not (workspace / "n.txt").exists()
        approver.decision = Decision.APPROVED
        ctx = context(workspace, gate=gate, budget_s=20.0)
        answer = await registry.dispatchable("append_note").execute({"name": "n.txt", "text": "written"}, ctx)
        assert answer == "added to n.txt", answer
        assert len(approver.asked) == 2
    finally:
        await manager.close()
