"""The one door to start a process: a permit from the gate, used once, for exec tools, sandboxed."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import sys
from pathlib import Path

import pytest
from sandbox_support import Approves, gate_fixture  # noqa: F401 (fixtures)

import companion
from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.gate import NEEDS_INTERNET, Gate, ProcessRefused, Verdict
from companion.safety.sandbox.door import Permit

ECHO_SERVER = ("import sys\n"
               "for line in sys.stdin:\n"
               "    sys.stdout.write('echo: ' + line)\n"
               "    sys.stdout.flush()\n")


async def test_a_long_lived_server_talks_over_its_pipes_and_is_stopped_on_request(gate: Gate) -> None:
    verdict = await gate.review_argv([sys.executable, "-c", ECHO_SERVER], tool="mcp:echo")
    server = await gate.start(verdict, risk="exec")
    server.stdin.write(b"hello\n")
    await server.stdin.drain()
    assert await asyncio.wait_for(server.stdout.readline(), 10) == b"echo: hello\n"
    server.stdin.write(b"second\n")
    await server.stdin.drain()
    assert await asyncio.wait_for(server.stdout.readline(), 10) == b"echo: second\n"
    await server.stop()
    assert server.returncode is not None
    await asyncio.wait_for(server.watcher, 5)
    runs = [entry["ran"] for entry in gate.audit.runs()]
    assert runs[0]["started"] is True and runs[0]["sandboxed"] is True and runs[0]["network"] is False
    assert runs[-1]["stopped"] is True


async def test_a_long_lived_server_is_sandboxed_and_closing_the_gate_stops_it(gate: Gate, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    # Its /tmp is private: what it writes there never reaches the real one.
    code = (f"import sys\nopen({str(outside)!r}, 'w').write('x')\nprint('wrote', flush=True)\n"
            "sys.stdin.read()\n")
    server = await gate.start(await gate.review_argv([sys.executable, "-c", code], tool="mcp:pry"), risk="exec")
    assert await asyncio.wait_for(server.stdout.readline(), 10) == b"wrote\n"
    assert not outside.exists()
    await gate.close()
    assert server.returncode is not None


async def test_a_server_that_needs_the_internet_is_asked_every_time_and_gets_it(gate: Gate) -> None:
    verdict = await gate.review_argv(["npx", "some-server"], tool="mcp:web", network=True)
    asked = gate.approver.asked[-1]
    assert NEEDS_INTERNET in asked.reason and asked.saveable is False
    assert verdict.allowed and verdict.network


async def test_a_read_or_write_tool_cannot_start_a_process(gate: Gate) -> None:
    for risk in ("read", "write", "network"):
        verdict = await gate.review("echo hi")
        with pytest.raises(ProcessRefused, match="only exec tools"):
            await gate.run(verdict, risk=risk, timeout_s=5)
    assert gate.audit.runs() == []


async def test_a_permit_runs_once_and_a_forged_one_never(gate: Gate) -> None:
    verdict = await gate.review("echo hi")
    assert (await gate.run(verdict, risk="exec", timeout_s=5)).output == "hi\n"
    with pytest.raises(ProcessRefused):
        await gate.run(verdict, risk="exec", timeout_s=5)
    forged = Verdict(True, Decision.APPROVED, "asked",
                     permit=Permit(("bash", "-c", "echo pwned"), "echo pwned", "shell", ticket="0" * 32))
    with pytest.raises(ProcessRefused):
        await gate.run(forged, risk="exec", timeout_s=5)
    other = await gate.review("echo fine")
    swapped = dataclasses.replace(other, permit=dataclasses.replace(other.permit, argv=("bash", "-c", "echo pwned")))
    # A permit is checked by its ticket, and the ticket by what it was issued for.
    with pytest.raises(ProcessRefused):
        await gate.run(swapped, risk="exec", timeout_s=5)
    refused = await Gate(gate.workspace, gate.grants).review("touch x")  # nobody to ask
    with pytest.raises(ProcessRefused):
        await gate.run(refused, risk="exec", timeout_s=5)


def test_nothing_but_the_door_imports_the_raw_runner_or_starts_processes() -> None:
    package = Path(companion.__file__).parent
    # outbound.py starts slirp4netns, the sandbox's network, for the door.
    # sandbox.py asks bwrap which options it has; probe.py runs `true` in the same kind of
    # sandbox the commands get, to see that one can run here.
    # identity.py starts unshare to make the user namespace an idmapped workspace maps through.
    # voice/addressing/learning.py starts espeak-ng to say her own names in other voices: a
    # fixed argv with no shell; the name, from her personality file (which no tool may write),
    # is read from a file. Nothing a model or a web page says reaches it.
    # outside.py runs a package launcher (uvx, npx) for a declared MCP server: offline to print
    # where its package is, and online for the one download the user said yes to.
    allowed = {package / "safety" / name for name in (
        "sandbox/door.py", "sandbox/sandbox.py", "sandbox/_runner.py", "network/outbound.py",
        "sandbox/identity.py", "sandbox/outside.py", "sandbox/probe.py")}
    allowed.add(package / "voice" / "addressing" / "learning.py")
    offenders = []
    for path in package.rglob("*.py"):
        if path in allowed:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Attribute) and node.attr in (
                    "create_subprocess_exec", "create_subprocess_shell", "system", "popen", "fork"):
                names = [node.attr]
            if any(n.startswith(("subprocess", "companion.safety.sandbox._runner", "pty", "multiprocessing"))
                   or n in ("create_subprocess_exec", "create_subprocess_shell", "system", "popen", "fork")
                   for n in names):
                offenders.append(f"{path.relative_to(package)}:{node.lineno}")
    assert offenders == []


class Counts:
    """Approves, and counts the questions."""

    def __init__(self) -> None:
        self.asked = 0

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked += 1
        return Answer(Decision.APPROVED, always=True)


async def test_grants_and_auto_safe_never_give_the_network_only_a_question_does(gate: Gate) -> None:
    gate.approver = Counts()
    gate.grant_family("git")
    gate.grants.add_line("wc -l notes.txt")
    assert not (await gate.review("git status")).network and gate.approver.asked == 0  # family grant
    assert not (await gate.review("ls")).network and gate.approver.asked == 0  # auto-safe
    assert not (await gate.review("wc -l notes.txt")).network and gate.approver.asked == 0  # line grant
    for line in ("git pull", "ls", "wc -l notes.txt"):
        verdict = await gate.review(line, network=True)
        assert verdict.allowed and verdict.network and verdict.how == "asked"
    assert gate.approver.asked == 3
    # "Always" on an internet card saves nothing: the next time asks again.
    assert "git pull" not in gate.grants.current().lines
    await gate.review("git pull", network=True)
    assert gate.approver.asked == 4


async def test_code_never_gets_the_network_even_when_approved(gate: Gate) -> None:
    verdict = await gate.review_code("print(1)", [])
    assert verdict.allowed and not verdict.network and verdict.how == "asked"
