"""On a server marked trusted, a tool that says nothing about itself still asks (issue 33).

The protocol's defaults for a tool with no annotations are "not read-only, may be destructive":
trust skips the card only for tools their server calls harmless. A real stdio server, started
through the sandbox's door as the app starts it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from companion.config import McpServerSettings
from companion.mcp import McpManager, ServerState
from companion.mcp.launch import sandboxed_starter
from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.gate import build_gate
from companion.tools.context import Mode, ToolContext
from companion.tools.registry import Registry

PLAIN_SERVER = Path(__file__).resolve().parent.parent / "mcp_servers" / "plain_server.py"


class Declines:
    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(Decision.DECLINED)


async def test_a_trusted_server_s_tool_without_annotations_asks_before_it_runs(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "keep.md").write_text("precious\n")
    approver = Declines()
    gate = build_gate(workspace, tmp_path / "approvals.toml", tmp_path, approver=approver)
    plain = McpServerSettings(name="plain", command=sys.executable, args=(str(PLAIN_SERVER),),
                              timeout_s=20.0, trusted=True)
    registry = Registry()
    manager = McpManager((plain,), registry, sandboxed_starter(gate))
    try:
        status = await manager.activate(plain.family)  # returns once the server is up, tools listed
        assert status.state is ServerState.UP and [name for name, *_ in status.tools] == ["wipe"], status
        ctx = ToolContext(workspace=workspace, data_dir=tmp_path, mode=Mode.WORK, services={"gate": gate})
        answer = await registry.dispatchable("wipe").execute({"name": "keep.md"}, ctx)
        assert len(approver.asked) == 1 and "didn't run it" in answer, answer
        assert (workspace / "keep.md").read_text() == "precious\n"
    finally:
        await manager.close()
