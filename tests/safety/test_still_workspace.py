"""A still workspace from the card to the end of its run (issue 50, item 4).

The model plans ahead: while a card is open, or after the yes and before its run has ended, it
changes what will run with the tools that never ask, a background job's process or a server
that may write. Nothing of hers writes the workspace meanwhile: her file tools wait and then
say why not, processes that may write wait to start, and those already running are stopped by
the kernel until the run has ended. Through the real tools, gate and sandbox.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from sandbox_support import ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.consent.approval import ACCESS_WRITE, Answer, ApprovalRequest, Decision
from companion.safety.gate import Gate, ProcessRefused
from companion.tools.action import patch, shell, write_file

STILL = "I'm keeping the workspace still"


class ApprovesAfter:
    """Says yes once `meanwhile` (what the model does while the card is open) has finished."""

    def __init__(self, meanwhile: Callable[[], Awaitable[object]] | None = None) -> None:
        self.meanwhile = meanwhile
        self.asked: list[ApprovalRequest] = []
        self.seen: list[object] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        if self.meanwhile is not None:
            self.seen.append(await self.meanwhile())
        return Answer(Decision.APPROVED)


def write(ws: Path, name: str, text: str) -> None:
    (ws / name).parent.mkdir(parents=True, exist_ok=True)
    (ws / name).write_text(text)


async def test_her_file_tools_do_not_write_while_a_card_is_open(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, "helper.py", "print('helper as shown')\n")

    async def meanwhile() -> tuple[str, str]:
        return (await write_file.execute({"path": "helper.py", "content": "print('swapped')\n"},
                                         ctx_for(gate, write_file, budget_s=0.5)),
                await patch.execute({"path": "helper.py", "old_text": "as shown", "new_text": "patched"},
                                    ctx_for(gate, patch, budget_s=0.5)))

    gate.approver = ApprovesAfter(meanwhile)
    out = await shell.execute({"command": "python3 helper.py"}, ctx_for(gate, shell))
    assert "helper as shown" in out, out
    written, patched = gate.approver.seen[0]
    assert STILL in written and "didn't write helper.py" in written, written
    assert STILL in patched and "didn't change helper.py" in patched, patched
    assert (ws / "helper.py").read_text() == "print('helper as shown')\n"


async def test_a_file_written_by_rename_after_the_yes_waits_for_the_run_to_end(gate: Gate) -> None:
    # write_file replaces by rename, which used to detach the sandbox's snapshot of a pinned file.
    ws = gate.workspace
    write(ws, "run.sh", "sleep 0.5\ncat data.txt\n")
    write(ws, "data.txt", "data as shown\n")
    gate.approver = ApprovesAfter()
    verdict = await gate.review("sh run.sh")
    run = asyncio.ensure_future(gate.run(verdict, risk="exec", timeout_s=30))
    written = await write_file.execute({"path": "data.txt", "content": "swapped\n"}, ctx_for(gate, write_file))
    result = await run
    assert "data as shown" in result.output and "swapped" not in result.output, result.output
    assert written.startswith("Replaced data.txt"), written  # it waited, then wrote
    assert (ws / "data.txt").read_text() == "swapped\n"


async def test_a_writable_process_of_hers_that_is_running_is_stopped_while_a_card_is_open(gate: Gate) -> None:
    # A background job's process (or a server that may write) rewrites a file the approved line reads.
    ws = gate.workspace
    write(ws, "tick.sh", "i=0\nwhile :; do i=$((i+1)); echo $i > counter.txt; sleep 0.01; done\n")
    writer = gate.door.issue(("sh", "tick.sh"), "sh tick.sh", "shell", stdin=None, network=False,
                             how="line grant", access=ACCESS_WRITE)
    background = asyncio.ensure_future(gate.door.run(writer, risk="exec", timeout_s=60))
    try:
        while not (ws / "counter.txt").exists() or not (ws / "counter.txt").read_text().strip():
            assert not background.done(), background.result()
            await asyncio.sleep(0.01)

        async def meanwhile() -> str:
            await asyncio.sleep(0.3)
            return (ws / "counter.txt").read_text()

        gate.approver = ApprovesAfter(meanwhile)
        verdict = await gate.review("cat counter.txt; sleep 0.3; cat counter.txt", timeout_s=30)
        at_card = gate.approver.seen[0]
        result = await gate.run(verdict, risk="exec", timeout_s=30)
        first, second = result.output.split()[:2]
        assert first == second == at_card.strip(), (at_card, result.output)
        await asyncio.sleep(0.1)  # let go once the run has ended: it counts on
        assert (ws / "counter.txt").read_text().strip() != first or background.done()
    finally:
        background.cancel()
        await asyncio.gather(background, return_exceptions=True)


async def test_a_server_that_may_write_is_stopped_while_a_card_is_open(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, "serve.sh", "i=0\nwhile :; do i=$((i+1)); echo $i > counter.txt; sleep 0.01; done\n")
    verdict = gate.declared(("sh", "serve.sh"), tool="mcp")
    server = await gate.start(verdict, risk="exec")
    try:
        while not (ws / "counter.txt").exists() or not (ws / "counter.txt").read_text().strip():
            await asyncio.sleep(0.01)
        gate.approver = ApprovesAfter()
        verdict = await gate.review("cat counter.txt; sleep 0.3; cat counter.txt", timeout_s=30)
        result = await gate.run(verdict, risk="exec", timeout_s=30)
        first, second = result.output.split()[:2]
        assert first == second, result.output
    finally:
        await server.stop(grace_s=0.5)


async def test_a_process_that_may_write_waits_to_start_while_a_card_is_open_and_then_is_refused(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, "run.sh", "cat data.txt\n")
    write(ws, "data.txt", "data as shown\n")
    granted = gate.door.issue(("sh", "-c", "echo swapped > data.txt"), "echo swapped > data.txt", "shell",
                              stdin=None, network=False, how="line grant", access=ACCESS_WRITE)

    async def meanwhile() -> str:
        try:
            await gate.door.run(granted, risk="exec", timeout_s=0.3)
        except ProcessRefused as exc:
            return exc.sentence
        return "it ran"

    gate.approver = ApprovesAfter(meanwhile)
    verdict = await gate.review("sh run.sh")
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert STILL in gate.approver.seen[0] and "didn't start it" in gate.approver.seen[0], gate.approver.seen
    assert "data as shown" in result.output, result.output
    assert (ws / "data.txt").read_text() == "data as shown\n"


async def test_a_command_that_only_reads_still_runs_while_a_card_is_open(gate: Gate) -> None:
    write(gate.workspace, "notes.txt", "read while asked\n")

    async def meanwhile() -> str:
        return await shell.execute({"command": "cat notes.txt"}, ctx_for(gate, shell, budget_s=20))

    gate.approver = ApprovesAfter(meanwhile)
    await gate.review("touch made.txt")
    assert "read while asked" in gate.approver.seen[0], gate.approver.seen


async def test_a_second_card_waits_for_the_first_ones_run_to_end(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, "run.sh", "sleep 0.3\necho first > order.txt\n")
    write(ws, "show.sh", "cat order.txt\n")
    gate.approver = ApprovesAfter()
    first = await gate.review("sh run.sh")
    running = asyncio.ensure_future(gate.run(first, risk="exec", timeout_s=30))
    gate.approver = ApprovesAfter(lambda: asyncio.to_thread((ws / "order.txt").exists))
    second = await gate.review("sh show.sh")  # its card is shown (and its files read) after the first run
    assert gate.approver.seen == [True]
    await running
    result = await gate.run(second, risk="exec", timeout_s=30)
    assert "first" in result.output, result.output


async def test_a_yes_that_is_never_run_lets_the_workspace_go(gate: Gate, monkeypatch: pytest.MonkeyPatch) -> None:
    from companion.safety.sandbox import door

    monkeypatch.setattr(door, "HOLD_LAPSE_S", 0.05)
    gate.approver = ApprovesAfter()
    verdict = await gate.review("touch made.txt")
    written = await write_file.execute({"path": "late.txt", "content": "x"}, ctx_for(gate, write_file, budget_s=5))
    assert written.startswith("Created late.txt"), written
    with pytest.raises(ProcessRefused):
        await gate.run(verdict, risk="exec", timeout_s=30)


async def test_code_on_a_card_runs_the_workspace_modules_it_imports_as_they_were_when_asked(gate: Gate) -> None:
    # Code runs in the workspace, whose folder comes first on sys.path: `import helper` runs a
    # workspace file the card never showed, read at the run.
    ws = gate.workspace
    write(ws, "helper.py", "print('helper as shown')\n")
    gate.approver = ApprovesAfter()
    verdict = await gate.review_code("import helper\n", [])
    assert "helper.py" in verdict.permit.pins, verdict.permit.pins
    write(ws, "helper.py", "print('swapped')\n")  # after the yes (as the user: hers would wait)
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert "helper as shown" in result.output and "swapped" not in result.output, result.output


class _Server:
    """Stands in for a running server's session (every server runs with the workspace writable)."""

    def __init__(self) -> None:
        from companion.config import McpServerSettings

        self.name = "notes"
        self.server = McpServerSettings(name="notes", command="notes-server", trusted=True)
        self.up = True
        self.calls: list[str] = []

    async def call(self, name: str, args: dict, budget_s: float):
        from companion.mcp.connection import CallOutcome

        self.calls.append(name)
        return CallOutcome("written", True)


async def test_a_server_tool_call_waits_while_a_card_is_open_and_then_says_why(gate: Gate) -> None:
    from companion.mcp.connection import ToolInfo
    from companion.mcp.family import tool_spec

    server = _Server()
    spec = tool_spec(server, ToolInfo("save_note", "Saves a note.", {"type": "object"}, destructive=False))

    async def meanwhile() -> str:
        return await spec.execute({}, ctx_for(gate, shell, budget_s=0.3))

    gate.approver = ApprovesAfter(meanwhile)
    verdict = await gate.review("touch made.txt")
    said = gate.approver.seen[0]
    assert STILL in said and "save_note from 'notes'" in said and server.calls == [], said
    await gate.run(verdict, risk="exec", timeout_s=30)
    assert await spec.execute({}, ctx_for(gate, shell)) == "written"  # the run has ended


async def test_a_card_that_cannot_wait_for_an_approved_run_to_end_says_so_and_asks_nothing(gate: Gate) -> None:
    write(gate.workspace, "long.sh", "sleep 3\n")
    write(gate.workspace, "other.sh", "echo other\n")
    gate.approver = ApprovesAfter()
    first = await gate.review("sh long.sh")
    running = asyncio.ensure_future(gate.run(first, risk="exec", timeout_s=30))
    second = await gate.review("sh other.sh", timeout_s=0.2)
    assert not second.allowed and "still running" in second.sentence, second
    assert [card.command for card in gate.approver.asked] == ["sh long.sh"]
    await running


async def test_a_writer_that_cannot_be_stopped_means_no_card_is_shown(gate: Gate) -> None:
    # Fails closed: a card whose stillness can't be made real is not put at all.
    async def refuses_to_stop():
        raise PermissionError(1, "Operation not permitted")

    gone = gate.still.running(refuses_to_stop)
    gate.approver = ApprovesAfter()
    verdict = await gate.review("touch made.txt")
    gone()
    assert not verdict.allowed and "couldn't stop a command of mine" in verdict.sentence, verdict
    assert gate.approver.asked == []
    written = await write_file.execute({"path": "after.txt", "content": "x"}, ctx_for(gate, write_file, budget_s=2))
    assert written.startswith("Created after.txt"), written  # the workspace was let go
