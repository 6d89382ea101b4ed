"""MCP servers as they are published, run through `uvx` and `npx`, each through the sandbox
(issue 38): real packages from PyPI (`mcp-server-time`) and the npm registry
(`@modelcontextprotocol/server-memory`), downloaded by the real launcher into a cache of the
test's own, once, outside the sandbox and only after a yes on a card; then run from that cache,
of which the sandbox shows only the package's own folder, read-only."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from test_mcp_tools import ScriptedApprover, context, sandbox_gate, wait_until

from companion.config import McpServerSettings
from companion.mcp import McpManager, ServerState
from companion.mcp.launch import sandboxed_starter
from companion.safety.consent.approval import Decision
from companion.tools.registry import Registry

DOWNLOAD_S = 240.0


def _uvx() -> str:
    from uv import find_uv_bin

    found = shutil.which("uvx", path=os.path.dirname(find_uv_bin()))
    assert found is not None, "uv (the dev extras) carries uvx beside uv"
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


@pytest.fixture
def uv_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty uv cache of this test's own (hidden by the sandbox, like ~/.cache/uv; apart from
    her own folders, which the test gate keeps in tmp_path)."""
    cache = tmp_path_factory.mktemp("uv-cache")
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")  # the test machine's own Python
    monkeypatch.setenv("UV_PYTHON", sys.executable)
    monkeypatch.setenv("UV_TOOL_DIR", str(cache / "tools"))
    return cache


@pytest.fixture
def npm_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty npm cache of this test's own (like ~/.npm)."""
    assert shutil.which("npx") is not None, "node and npm are system dependencies of the tests"
    cache = tmp_path_factory.mktemp("npm-cache")
    monkeypatch.setenv("npm_config_cache", str(cache))
    monkeypatch.setenv("npm_config_update_notifier", "false")
    return cache


class SlowToAnswer(ScriptedApprover):
    """A user who takes a while to read the card before answering."""

    def __init__(self, decision: Decision, after_s: float) -> None:
        super().__init__(decision)
        self.after_s = after_s

    async def ask(self, request):
        await asyncio.sleep(self.after_s)  # the user reading, not a wait on another task
        return await super().ask(request)


async def started(workspace: Path, server: McpServerSettings, approver: ScriptedApprover
                  ) -> tuple[McpManager, Registry]:
    registry = Registry()
    manager = McpManager([server], registry, sandboxed_starter(sandbox_gate(workspace, approver)))
    manager.start()
    await wait_until(lambda: manager.connection(server.family).state in (ServerState.UP, ServerState.DOWN),
                     timeout=DOWNLOAD_S)
    return manager, registry


def _only_its_own_folder(visible: tuple[str, ...], cache: Path) -> None:
    inside = [Path(p) for p in visible if Path(p).is_relative_to(cache)]
    assert inside, visible
    for path in inside:
        assert path != cache and len(path.relative_to(cache).parts) == 2, visible  # <bucket>/<package env>


async def test_a_uvx_server_downloads_once_after_a_yes_and_runs_in_the_sandbox_from_its_cache(
        workspace: Path, uv_cache: Path) -> None:
    server = McpServerSettings(name="time", command=_uvx(), args=("mcp-server-time", "--local-timezone", "UTC"),
                               trusted=True, timeout_s=10.0)
    # A no: nothing is downloaded, and the server says why.
    declining = ScriptedApprover(Decision.DECLINED)
    manager, _registry = await started(workspace, server, declining)
    try:
        status = manager.status("mcp:time")
        assert status.state is ServerState.DOWN and "download" in status.reason, status
        [card] = declining.asked
        assert card.network and "--no-build" in card.command and "mcp-server-time" in card.command, card
        assert not (uv_cache / "archive-v0").exists()
    finally:
        await manager.close()

    # A yes that takes longer than the server's timeout_s: the question and the download are not
    # part of it (only the handshake once its program runs is).
    approving = SlowToAnswer(Decision.APPROVED, after_s=server.timeout_s + 1.0)
    manager, registry = await started(workspace, server, approving)
    try:
        assert manager.status("mcp:time").up, manager.status("mcp:time").reason
        assert len(approving.asked) == 1
        ctx = context(workspace)
        answer = await registry.dispatchable("get_current_time").execute({"timezone": "UTC"}, ctx)
        assert not ctx.failed and json.loads(answer)["timezone"] == "UTC", answer
        _only_its_own_folder(manager.connection("mcp:time").visible, uv_cache)
    finally:
        await manager.close()

    # Started again: it is in the cache, so nothing is asked.
    again = ScriptedApprover(Decision.DECLINED)
    manager, _registry = await started(workspace, server, again)
    try:
        assert manager.status("mcp:time").up and again.asked == []
    finally:
        await manager.close()


async def test_an_npx_server_downloads_once_after_a_yes_and_keeps_its_files_in_the_workspace(
        workspace: Path, npm_cache: Path) -> None:
    memory = workspace / "memory.jsonl"
    server = McpServerSettings(name="memory", command="npx", args=("-y", "@modelcontextprotocol/server-memory"),
                               env={"MEMORY_FILE_PATH": str(memory)}, trusted=True, timeout_s=DOWNLOAD_S)
    approving = ScriptedApprover(Decision.APPROVED)
    manager, registry = await started(workspace, server, approving)
    try:
        assert manager.status("mcp:memory").up, manager.status("mcp:memory").reason
        [card] = approving.asked
        assert card.network and "@modelcontextprotocol/server-memory" in card.command, card
        entity = {"name": "Ada", "entityType": "person", "observations": ["writes programs"]}
        ctx = context(workspace)
        await registry.dispatchable("create_entities").execute({"entities": [entity]}, ctx)
        assert not ctx.failed
        graph = await registry.dispatchable("read_graph").execute({}, context(workspace))
        assert "Ada" in graph and "Ada" in memory.read_text(encoding="utf-8")
        _only_its_own_folder(manager.connection("mcp:memory").visible, npm_cache)
    finally:
        await manager.close()
