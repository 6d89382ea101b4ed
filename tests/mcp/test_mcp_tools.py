"""Tools from MCP servers: real servers over stdio (one written here with the SDK, and
mcp-server-time from the index), registered as work-only families `mcp:<server>`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from brain_harness import Recorder, make_config, registry_with, start_companion, tool
from fake_internet import PUBLIC, fake_internet
from places import MCP_SERVERS

from companion.config import McpServerSettings, Settings
from companion.events import ApprovalNeeded, EventBus, WorkChanged
from companion.mcp import McpManager, ServerState
from companion.mcp.launch import sandboxed_starter
from companion.safety.consent.approval import Answer, Decision
from companion.safety.sandbox import sandbox
from companion.settings_file import settings_from_dict, settings_to_dict
from companion.tools.builtin import activate_tools, start_work
from companion.tools.context import Mode, ToolContext
from companion.tools.registry import Registry, spec_from_module

NOTES_SERVER = MCP_SERVERS / "notes_server.py"
LIAR_SERVER = MCP_SERVERS / "liar_server.py"


def notes_server(**overrides) -> McpServerSettings:
    return McpServerSettings(name="notes", command=sys.executable, args=(str(NOTES_SERVER),),
                             timeout_s=overrides.pop("timeout_s", 20.0), **overrides)


def time_server(trusted: bool = True) -> McpServerSettings:
    return McpServerSettings(name="time", command=sys.executable, trusted=trusted,
                             args=("-m", "mcp_server_time", "--local-timezone", "UTC"), timeout_s=20.0)


def descendants(pid: int | None) -> set[int]:
    """`pid` and every process under it (a server's sandbox and what runs inside)."""
    found, todo = set(), [pid] if pid is not None else []
    while todo:
        current = todo.pop()
        found.add(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
    return found


def pids_running(script: str) -> list[int]:
    """Processes whose command line names `script` (the server, wherever it was started from)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(script.encode() in arg for arg in argv):
            found.append(int(entry.name))
    return found


async def wait_until(condition, timeout: float = 20.0) -> None:
    async def loop() -> None:
        while not condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(loop(), timeout)


class ScriptedApprover:
    """Answers every approval question with `decision` and remembers what was asked."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.asked = []

    async def ask(self, request):
        self.asked.append(request)
        return Answer(self.decision)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


def sandbox_gate(workspace: Path, approver=None, bus: EventBus | None = None):
    from companion.safety.gate import build_gate

    return build_gate(workspace, workspace.parent / "approvals.toml", workspace.parent, bus=bus,
                      approver=approver)


async def started_manager(workspace: Path, *servers: McpServerSettings, registry: Registry | None = None,
                          bus: EventBus | None = None, gate=None) -> tuple[McpManager, Registry]:
    """The servers started through the sandbox's door, as the app starts them."""
    registry = registry or Registry()
    manager = McpManager(servers, registry, sandboxed_starter(gate or sandbox_gate(workspace)), bus=bus)
    manager.start()
    for server in servers:
        await wait_until(lambda server=server: manager.connection(server.family).state
                         in (ServerState.UP, ServerState.DOWN))
        await wait_until(lambda server=server: manager.connection(server.family).state is ServerState.DOWN
                         or manager.status(server.family).tools)
    return manager, registry


def context(workspace: Path, gate=None, **fields) -> ToolContext:
    return ToolContext(workspace=workspace, data_dir=workspace.parent, mode=Mode.WORK,
                       services={"gate": gate} if gate else {}, **fields)


# --- settings ----------------------------------------------------------------------------

def test_mcp_servers_are_declared_in_settings_and_survive_a_save():
    settings = settings_from_dict({"mcp": {"servers": [
        {"name": "time", "command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
         "env": {"TZ": "UTC"}},
        {"name": "browser", "url": "http://127.0.0.1:9000/mcp"},
    ]}})
    assert [s.family for s in settings.mcp.servers] == ["mcp:time", "mcp:browser"]
    assert settings.mcp.servers[0].env == {"TZ": "UTC"}
    assert settings_from_dict(settings_to_dict(settings)) == settings


@pytest.mark.parametrize("entry, words", [
    ({"name": "Bad Name", "command": "x"}, "lower-case"),
    ({"name": "both", "command": "x", "url": "http://h/mcp"}, "either a command"),
    ({"name": "neither"}, "either a command"),
    ({"name": "t", "command": "x", "env": {"A": 1}}, "table of strings"),
])
def test_a_bad_mcp_server_entry_is_named_in_a_sentence(entry, words):
    with pytest.raises(ValueError, match=words):
        settings_from_dict({"mcp": {"servers": [entry]}})


def test_the_same_server_name_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        settings_from_dict({"mcp": {"servers": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]}})


# --- registration and switching -----------------------------------------------------------

async def test_a_servers_tools_register_under_its_family_for_work_mode_and_never_for_a_voice_turn(workspace):
    manager, registry = await started_manager(workspace, notes_server(), time_server())
    try:
        tools = registry.tools()
        assert tools["read_note"].toolset == "mcp:notes"
        assert tools["get_current_time"].toolset == "mcp:time"
        assert {tools[n].risk for n in ("read_note", "append_note", "delete_note")} == {"read", "write", "exec"}
        work = {s["name"] for s in registry.schemas_for("work")}
        assert {"read_note", "delete_note", "get_current_time", "convert_time"} <= work
        voice = {s["name"] for s in registry.schemas_for("companion")}
        assert not voice & {"read_note", "delete_note", "get_current_time"}
        assert registry.all_toolsets()["mcp:time"] == ["convert_time", "get_current_time"]
    finally:
        await manager.close()


async def test_an_mcp_tool_never_replaces_one_of_her_own(workspace):
    own = tool("get_time")
    manager, registry = await started_manager(workspace, notes_server(), registry=registry_with(own))
    try:
        assert registry.tools()["get_time"] is own
        assert manager.status("mcp:notes").skipped == ("get_time",)
    finally:
        await manager.close()


async def test_a_trusted_servers_tool_runs_at_once_and_its_answer_is_what_the_model_reads(workspace):
    (workspace / "todo.md").write_text("buy milk\n", encoding="utf-8")
    manager, registry = await started_manager(workspace, notes_server(trusted=True))
    try:
        ctx = context(workspace)
        answer = await registry.dispatchable("read_note").execute({"name": "todo.md"}, ctx)
        assert answer == "buy milk" and not ctx.failed
    finally:
        await manager.close()


async def test_switching_the_family_off_ends_the_server_process_and_its_tools_at_once(workspace):
    manager, registry = await started_manager(workspace, notes_server())
    pids = pids_running(str(NOTES_SERVER))
    assert pids, "the notes server should be running"
    registry.set_toolset_enabled("mcp:notes", False)
    assert registry.dispatchable("read_note") is None  # at once, before the process has ended
    await wait_until(lambda: not any(pid in pids_running(str(NOTES_SERVER)) for pid in pids))
    await wait_until(lambda: manager.connection("mcp:notes").state is ServerState.STOPPED)
    assert "mcp:notes" in registry.all_toolsets()  # still listed in Settings, switched off

    registry.set_toolset_enabled("mcp:notes", True)  # and on again: a fresh server
    await wait_until(lambda: registry.dispatchable("read_note") is not None)
    assert pids_running(str(NOTES_SERVER))
    await manager.close()
    await wait_until(lambda: not pids_running(str(NOTES_SERVER)))


# --- safety -------------------------------------------------------------------------------

async def test_a_destructive_tool_asks_and_runs_nothing_when_declined(workspace):
    note = workspace / "keep.md"
    note.write_text("precious\n", encoding="utf-8")
    approver = ScriptedApprover(Decision.DECLINED)
    bus = EventBus()
    recorder = Recorder()
    bus.subscribe(recorder)
    gate = sandbox_gate(workspace, approver, bus)
    manager, registry = await started_manager(workspace, notes_server(), gate=gate)
    try:
        ctx = context(workspace, gate)
        answer = await registry.dispatchable("delete_note").execute({"name": "keep.md"}, ctx)
        assert ctx.refused and "didn't run it" in answer
        assert note.read_text(encoding="utf-8") == "precious\n"
        card = recorder.of(ApprovalNeeded)[0]
        assert "mcp:notes" in card.command and "delete_note" in card.command and "keep.md" in card.command
        assert not card.saveable  # destructive: asks every time

        approver.decision = Decision.APPROVED
        ctx = context(workspace, gate)
        assert await registry.dispatchable("delete_note").execute({"name": "keep.md"}, ctx) == "deleted keep.md"
        assert not note.exists()
    finally:
        await manager.close()


async def test_a_tool_that_changes_things_asks_but_may_be_allowed_always(workspace):
    approver = ScriptedApprover(Decision.APPROVED)
    approver.ask = _always(approver)
    gate = sandbox_gate(workspace, approver)
    manager, registry = await started_manager(workspace, notes_server(), gate=gate)
    try:
        for line in ("one", "two"):
            ctx = context(workspace, gate)
            await registry.dispatchable("append_note").execute({"name": "log.md", "text": line}, ctx)
        assert len(approver.asked) == 1  # "always" was remembered for this tool of this server
        assert approver.asked[0].saveable
        assert (workspace / "log.md").read_text(encoding="utf-8") == "one\ntwo\n"
    finally:
        await manager.close()


def _always(approver: ScriptedApprover):
    async def ask(request):
        approver.asked.append(request)
        return Answer(Decision.APPROVED, always=True)

    return ask


async def test_a_server_runs_in_the_sandbox_writing_only_in_the_workspace_and_offline(workspace):
    outside = NOTES_SERVER.parent / f"outside-{workspace.parent.name}.md"  # the read-only system
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    approver = ScriptedApprover(Decision.APPROVED)
    manager, registry = await started_manager(workspace, notes_server(), gate=sandbox_gate(workspace, approver))
    try:
        ctx = context(workspace, sandbox_gate(workspace, approver))
        answer = await registry.dispatchable("append_note").execute({"name": str(outside), "text": "x"}, ctx)
        assert ctx.failed and not outside.exists()
        await registry.dispatchable("append_note").execute({"name": "inside.md", "text": "x"}, context(workspace, sandbox_gate(workspace, approver)))
        assert (workspace / "inside.md").read_text(encoding="utf-8") == "x\n"
        offline = await registry.dispatchable("connect").execute(
            {"port": port}, context(workspace, sandbox_gate(workspace, approver)))
        assert offline.startswith("no connection")
    finally:
        await manager.close()

    # With the network it reaches the internet (here: a stand-in host in a network namespace of
    # its own, through the sandbox's slirp4netns), never her loopback.
    online_server = notes_server(network=True, trusted=True)
    manager, registry = await started_manager(workspace, online_server)
    try:
        if (why := sandbox.network_unavailable_reason()) is not None:
            # Here (a user for whom /dev/net/tun is narrowed) it doesn't start, and says why: it is
            # never given her own network instead.
            status = manager.status("mcp:notes")
            assert status.state is ServerState.DOWN and why in status.reason, status
            assert registry.dispatchable("connect") is None
            return
        connect = registry.dispatchable("connect")
        if os.geteuid() == 0:  # only root may wire up the stand-in internet
            with fake_internet() as internet:
                reached = await connect.execute({"port": internet.port, "host": PUBLIC}, context(workspace))
                assert reached == "connected" and internet.accepted() == [PUBLIC]
        assert (await connect.execute({"port": port}, context(workspace))).startswith("no connection")
    finally:
        await manager.close()
        listener.close()
    assert answer  # the refusal came back as a sentence for the model


# --- failure ------------------------------------------------------------------------------

async def test_killing_the_server_mid_call_gives_a_sentence_and_marks_the_family_unavailable(workspace):
    bus = EventBus()
    manager, registry = await started_manager(workspace, notes_server(trusted=True), bus=bus)
    try:
        call = asyncio.ensure_future(registry.dispatchable("slow_echo").execute(
            {"text": "hello", "seconds": 30}, ctx := context(workspace, budget_s=60.0)))
        await wait_until(lambda: (workspace / "slow_echo.started").exists())
        server = set(pids_running(str(NOTES_SERVER))) & descendants(manager.connection("mcp:notes").pid)
        assert server, "the notes server is not running under its connection"
        for pid in server:  # this test's server alone (others run beside it)
            with contextlib.suppress(ProcessLookupError):  # its sandbox took it down with an earlier one
                os.kill(pid, signal.SIGKILL)
        answer = await asyncio.wait_for(call, 15)
        assert ctx.failed and "'notes'" in answer
        status = manager.status("mcp:notes")
        assert status.state is ServerState.DOWN and "'notes'" in status.reason
        assert not registry.is_available(registry.tools()["read_note"])
        assert "read_note" not in {s["name"] for s in registry.schemas_for("work")}
    finally:
        await manager.close()


async def test_a_server_that_cannot_start_says_so_and_the_other_tools_keep_working(workspace):
    bus = EventBus()
    recorder = Recorder()
    bus.subscribe(recorder)
    broken = McpServerSettings(name="broken", command=sys.executable, args=("-c", "import sys; sys.exit(3)"),
                               timeout_s=10.0)
    manager, registry = await started_manager(workspace, broken, time_server(), bus=bus)
    try:
        status = manager.status("mcp:broken")
        assert status.state is ServerState.DOWN and "'broken'" in status.reason
        assert any("'broken'" in e.sentence for e in recorder.events if hasattr(e, "sentence"))
        ctx = context(workspace)
        answer = await registry.dispatchable("get_current_time").execute({"timezone": "UTC"}, ctx)
        assert '"timezone": "UTC"' in answer
    finally:
        await manager.close()


# --- a background job picks up a family ---------------------------------------------------

async def test_a_background_job_activates_the_time_server_and_calls_it(tmp_path, scripted_brain):
    task = "JOB: what time is it in Tokyo"
    scripted_brain.push(
        {"for": "tokyo", "tool_calls": [{"name": "start_work", "arguments": {"task": task}}]},
        {"for": "tokyo", "text": "[happy] I'll find out."},
        {"for": "JOB:", "tool_calls": [{"name": "activate_tools", "arguments": {"family": "mcp:time"}}]},
        {"for": "JOB:", "tool_calls": [{"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}]},
        {"for": "JOB:", "text": "It is evening in Tokyo."},
    )
    config = make_config(tmp_path, scripted_brain.url)
    config = type(config)(paths=config.paths, settings=_with_servers(config.settings, time_server()))
    registry = registry_with(spec_from_module(start_work), spec_from_module(activate_tools))
    registry.set_toolset_enabled("mcp:time", False)  # as a saved switch would at start-up
    companion, recorder = await start_companion(config, registry)
    try:
        assert registry.dispatchable("get_current_time") is None  # switched off: not started
        await companion.ask("what time is it in tokyo?")
        await recorder.wait_for(lambda: any(e.status == "finished" for e in recorder.of(WorkChanged)), 30)

        job = [b for b in scripted_brain.bodies if task in str(b["messages"][1]["content"])]
        first_offer = {t["function"]["name"] for t in job[0]["tools"]}
        assert "activate_tools" in first_offer and "get_current_time" not in first_offer
        assert "get_current_time" in {t["function"]["name"] for t in job[1]["tools"]}
        tool_answers = [m["content"] for m in job[2]["messages"] if m["role"] == "tool"]
        assert '"timezone": "Asia/Tokyo"' in tool_answers[-1]
        voice_offer = {t["function"]["name"] for t in scripted_brain.bodies[0]["tools"]}
        assert "activate_tools" not in voice_offer
        # The job is over: the family it switched on for itself is off again.
        assert registry.dispatchable("get_current_time") is None
        await wait_until(lambda: companion.mcp.connection("mcp:time").state is ServerState.STOPPED)
    finally:
        await companion.close()


def _with_servers(settings: Settings, *servers: McpServerSettings) -> Settings:
    from dataclasses import replace

    from companion.config import McpSettings

    return replace(settings, mcp=McpSettings(servers=servers))


async def test_the_app_quitting_ends_every_server(tmp_path, scripted_brain):
    config = make_config(tmp_path, scripted_brain.url)
    config = type(config)(paths=config.paths, settings=_with_servers(config.settings, notes_server()))
    companion, _ = await start_companion(config, Registry())
    await wait_until(lambda: companion.registry.dispatchable("read_note") is not None)
    assert pids_running(str(NOTES_SERVER))
    await companion.close()
    await wait_until(lambda: not pids_running(str(NOTES_SERVER)), 10)


# --- asking: every call of an untrusted server, whatever it says about itself --------------

async def test_a_tool_that_claims_to_only_read_still_asks_and_a_no_keeps_the_file(workspace):
    victim = workspace / "precious.md"
    victim.write_text("keep me\n", encoding="utf-8")
    approver = ScriptedApprover(Decision.DECLINED)
    liar = McpServerSettings(name="liar", command=sys.executable, args=(str(LIAR_SERVER),), timeout_s=20.0)
    gate = sandbox_gate(workspace, approver)
    manager, registry = await started_manager(workspace, liar, gate=gate)
    try:
        ctx = context(workspace, gate)
        answer = await registry.dispatchable("tidy").execute({"name": "precious.md"}, ctx)
        assert ctx.refused and "didn't run it" in answer
        assert victim.read_text(encoding="utf-8") == "keep me\n"
        asked = approver.asked[0]
        assert "says tidy only reads, but I can't check that" in asked.reason
        assert asked.saveable and asked.access == ""  # no process starts for a call
    finally:
        await manager.close()


async def test_a_server_marked_trusted_runs_its_tools_without_asking(workspace):
    (workspace / "old.md").write_text("x\n", encoding="utf-8")
    approver = ScriptedApprover(Decision.DECLINED)
    liar = McpServerSettings(name="liar", command=sys.executable, args=(str(LIAR_SERVER),),
                             timeout_s=20.0, trusted=True)
    gate = sandbox_gate(workspace, approver)
    manager, registry = await started_manager(workspace, liar, gate=gate)
    try:
        answer = await registry.dispatchable("tidy").execute({"name": "old.md"}, context(workspace, gate))
        assert answer == "tidied old.md" and not approver.asked
        assert not (workspace / "old.md").exists()
        (entry,) = [e for e in gate.audit.entries() if e["tool"] == "mcp:liar/tidy"]
        assert entry["how"] == "trusted server" and '"old.md"' in entry["command"]
    finally:
        await manager.close()


async def test_a_trusted_servers_tool_that_says_it_deletes_still_asks_every_time(workspace):
    note = workspace / "keep.md"
    note.write_text("precious\n", encoding="utf-8")
    approver = ScriptedApprover(Decision.DECLINED)
    gate = sandbox_gate(workspace, approver)
    manager, registry = await started_manager(workspace, notes_server(trusted=True), gate=gate)
    try:
        ctx = context(workspace, gate)
        answer = await registry.dispatchable("delete_note").execute({"name": "keep.md"}, ctx)
        assert ctx.refused and "didn't run it" in answer
        assert note.read_text(encoding="utf-8") == "precious\n"
        assert [not card.saveable for card in approver.asked] == [True]
        # Trust still skips the question for the server's other tools.
        answer = await registry.dispatchable("append_note").execute(
            {"name": "keep.md", "text": "more"}, context(workspace, gate))
        assert len(approver.asked) == 1 and "didn't run it" not in answer
    finally:
        await manager.close()


async def test_the_card_shows_every_argument_of_a_long_call_uncut(workspace):
    (workspace / "victim.md").write_text("x\n", encoding="utf-8")
    approver = ScriptedApprover(Decision.DECLINED)
    gate = sandbox_gate(workspace, approver)
    manager, registry = await started_manager(workspace, notes_server(), gate=gate)
    try:
        # The old card cut arguments at 600 characters: the padding pushed the path out of sight.
        padding = "a" * 5000
        args = {"name": "victim.md", "text": padding + "\n\u200b"}
        await registry.dispatchable("append_note").execute(args, context(workspace, gate))
        shown = approver.asked[0].command
        assert padding in shown and "victim.md" in shown and shown.endswith("}")
    finally:
        await manager.close()


def test_trusted_is_saved_in_settings_and_off_unless_said():
    settings = settings_from_dict({"mcp": {"servers": [
        {"name": "time", "command": "mcp-server-time", "trusted": True},
        {"name": "notes", "command": "notes-server"},
    ]}})
    assert [s.trusted for s in settings.mcp.servers] == [True, False]
    assert settings_to_dict(settings)["mcp"]["servers"][0]["trusted"] is True
