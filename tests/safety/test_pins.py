"""Issue 25: a pinned line covers what it pulls in (sourced scripts, imported modules, make's
includes, `make -C`, `sh < run.sh`, .npmrc), and a change to any of them while the card is
open asks again."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.safety.command_line.pins import files_run_by, fingerprint
from companion.safety.consent.approval import Answer, ApprovalRequest, AuditLog, Decision
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore
from companion.safety.sandbox import probe
from companion.tools.action import shell
from companion.tools.context import ToolContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "d").mkdir()
    files = {
        "run.sh": "source lib.sh\n. ./env.sh\necho ran\n", "lib.sh": ". deeper.sh\n", "deeper.sh": "true\n",
        "env.sh": "X=1\n", "tool.py": "import helper\nfrom pkg import mod\nimport os\n", "helper.py": "",
        "pkg/__init__.py": "", "pkg/mod.py": "", "Makefile": "include rules.mk\nall:\n\ttrue\n",
        "rules.mk": "", "d/Makefile": "-include sub.mk\n", "d/sub.mk": "", ".npmrc": "script-shell=x\n",
        "package.json": "{}", "steps.sh": "sh run.sh\npython3 tool.py\n",
    }
    for name, text in files.items():
        (ws / name).write_text(text)
    return ws


@pytest.mark.parametrize(("line", "pinned"), [
    ("sh run.sh", {"run.sh", "lib.sh", "deeper.sh", "env.sh"}),
    ("sh < run.sh", {"run.sh", "lib.sh", "deeper.sh", "env.sh"}),
    ("bash -c 'source lib.sh'", {"lib.sh", "deeper.sh"}),
    ("python3 tool.py", {"tool.py", "helper.py", "pkg/__init__.py", "pkg/mod.py"}),
    ("make", {"Makefile", "rules.mk"}),
    ("make -C d", {"d/Makefile", "d/sub.mk"}),
    ("npm test", {"package.json", ".npmrc"}),
    # Found by the red team: a module run with -m, a file piped into a shell, a script a script runs.
    ("python3 -m tool", {"tool.py", "helper.py", "pkg/__init__.py", "pkg/mod.py"}),
    ("python3 -m pkg.mod", {"pkg/__init__.py", "pkg/mod.py"}),  # the package runs first
    ("cat run.sh | sh", {"run.sh", "lib.sh", "deeper.sh", "env.sh"}),
    ("sh steps.sh", {"steps.sh", "run.sh", "lib.sh", "deeper.sh", "env.sh", "tool.py", "helper.py",
                     "pkg/__init__.py", "pkg/mod.py"}),
])
def test_a_line_is_pinned_with_what_it_pulls_in(workspace: Path, line: str, pinned: set[str]) -> None:
    assert {str(p) for p in files_run_by(line, workspace)} == pinned
    assert set(fingerprint(line, workspace)) == pinned


async def test_a_sourced_script_changed_while_the_card_is_open_asks_again(workspace: Path, tmp_path: Path) -> None:
    assert probe.unavailable_reason() is None, probe.unavailable_reason()

    class ChangesTheLibrary:
        def __init__(self) -> None:
            self.asked: list[ApprovalRequest] = []

        async def ask(self, request: ApprovalRequest) -> Answer:
            if not self.asked:
                (workspace / "deeper.sh").write_text("echo swapped\n")
            self.asked.append(request)
            return Answer(Decision.APPROVED)

    gate = Gate(workspace, GrantStore(tmp_path / "approvals.toml"), approver=ChangesTheLibrary(),
                audit=AuditLog(tmp_path / "approvals.log"))
    ctx = ToolContext(workspace=workspace, data_dir=tmp_path / "data", budget_s=30,
                      services={"gate": gate}, tool="shell", risk=shell.RISK)
    text = await shell.execute({"command": "bash run.sh"}, ctx)
    assert len(gate.approver.asked) == 2
    assert "deeper.sh changed while I was asking" in gate.approver.asked[1].reason
    assert "swapped" in text and "ran" in text
