"""What runs is what was approved, by construction (issue 33, item 2).

The files an approved line runs are read when its card is shown and the sandbox shows that
content at their paths: a change after the yes changes nothing. Where what runs can't all be
known ahead, the card says "I can't tell everything this runs" and "Always" isn't offered.
Through the real gate, the shell tool and the sandbox.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_support import ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.asking import CANT_TELL
from companion.safety.command_line.pins import MAX_PINNED, MAX_READ_BYTES
from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.gate import Gate
from companion.tools.action import shell


class Approves:
    """Says yes (with "always" when offered), and remembers the cards."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(Decision.APPROVED, always=True)


def write(ws: Path, name: str, text: str, mode: int = 0o644) -> None:
    path = ws / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


async def run(gate: Gate, line: str) -> str:
    return await shell.execute({"command": line}, ctx_for(gate, shell))


async def test_a_script_rewritten_after_the_yes_runs_as_it_was_when_asked(gate: Gate) -> None:
    write(gate.workspace, "run.sh", "echo approved\n")
    gate.approver = Approves()
    verdict = await gate.review("sh run.sh")
    write(gate.workspace, "run.sh", "echo swapped\n")  # between the yes and the run
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert "approved" in result.output and "swapped" not in result.output, result.output


async def test_a_script_run_through_a_link_runs_what_the_link_led_to_when_asked(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, "a.sh", "echo the approved one\n")
    write(ws, "b.sh", "echo the other one\n")
    os.symlink("a.sh", ws / "run.sh")
    gate.approver = Approves()
    verdict = await gate.review("sh run.sh")
    card = gate.approver.asked[-1]
    assert CANT_TELL in card.reason and "run.sh is a link" in card.reason and not card.saveable, card.reason
    (ws / "run.sh").unlink()
    os.symlink("b.sh", ws / "run.sh")  # flipped after the yes
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert "the approved one" in result.output and "the other one" not in result.output, result.output


async def test_a_script_a_script_starts_through_bash_c_is_pinned_too(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, "run.sh", "bash -c './step.sh'\n")
    write(ws, "step.sh", "echo step as approved\n", 0o755)
    gate.approver = Approves()
    verdict = await gate.review("sh run.sh")
    assert CANT_TELL not in gate.approver.asked[-1].reason
    write(ws, "step.sh", "echo step swapped\n", 0o755)
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert "step as approved" in result.output and "swapped" not in result.output, result.output


@pytest.mark.parametrize(("files", "line", "why"), [
    ({"run.sh": "bash -c \"$STEP\"\n"}, "sh run.sh", "built at run time"),
    ({"run.sh": "eval \"$(cat steps)\"\n"}, "sh run.sh", "builds a command at run time"),
    ({"run.sh": "true\n" * (MAX_READ_BYTES // 5 + 1) + "source late.sh\n", "late.sh": "echo late\n"}, "sh run.sh",
     "longer than"),
    ({"Makefile": "all:\n\t./build.sh\n", "build.sh": "echo built\n"}, "make", "recipes"),
    ({"tool.py": "import json\nprint(json.dumps(1))\n"}, "python3 tool.py", "stand in for a module"),
    ({"tool.py": "import importlib\nimportlib.import_module('x')\n"}, "python3 tool.py", "decides at run time"),
])
async def test_where_what_runs_cannot_all_be_known_the_card_says_so_and_offers_no_always(
        gate: Gate, files: dict[str, str], line: str, why: str) -> None:
    for name, text in files.items():
        write(gate.workspace, name, text)
    gate.approver = Approves()
    await run(gate, line)
    card = gate.approver.asked[-1]
    assert CANT_TELL in card.reason and why in card.reason, card.reason
    assert not card.saveable and CANT_TELL in card.once_only
    assert gate.grants.current().lines == ()


async def test_past_the_files_it_follows_the_card_says_it_cannot_tell(gate: Gate) -> None:
    ws = gate.workspace
    names = [f"s{i:03d}.sh" for i in range(MAX_PINNED + 1)]
    write(ws, "run.sh", "".join(f"source {name}\n" for name in names))
    for name in names:
        write(ws, name, "true\n")
    gate.approver = Approves()
    await run(gate, "sh run.sh")
    assert f"more files than the {MAX_PINNED}" in gate.approver.asked[-1].reason


async def test_a_python_relative_import_is_pinned_and_runs_as_approved(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, "pkg/__init__.py", "")
    write(ws, "pkg/tool.py", "from . import helper\nhelper.say()\n")
    write(ws, "pkg/helper.py", "def say():\n    print('helper as approved')\n")
    gate.approver = Approves()
    verdict = await gate.review("python3 -m pkg.tool")
    assert "pkg/helper.py" in verdict.permit.contents
    write(ws, "pkg/helper.py", "def say():\n    print('helper swapped')\n")
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert "helper as approved" in result.output, result.output
