"""execute_code: Python in a sandboxed subprocess; risky code always needs the user's OK."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.safety.command_line.code_scan import scan_code
from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.gate import CODE_FAMILY, Gate
from companion.safety.grants import GrantStore
from companion.tools.action import execute_code
from companion.tools.context import ToolContext


class ScriptedApprover:
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.answers.pop(0)


def setup(tmp_path: Path, *answers: Answer, granted: bool = False) -> tuple[ToolContext, ScriptedApprover]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    approver = ScriptedApprover(*answers)
    gate = Gate(workspace, GrantStore(tmp_path / "approvals.toml"), approver=approver)
    if granted:
        gate.grant_family(CODE_FAMILY)
    ctx = ToolContext(workspace=workspace, data_dir=tmp_path / "data", budget_s=30, services={"gate": gate},
                      tool="execute_code", risk=execute_code.RISK)
    return ctx, approver


RISKY = [
    ("import os\nos.remove('a.txt')", "deletes files"),
    ("import shutil\nshutil.rmtree('build')", "deletes files"),
    ("from pathlib import Path\nPath('a').unlink()", "deletes files"),
    ("open('out.txt', 'w').write('x')", "writes or changes files"),
    ("with open('log', mode='a') as f: f.write('x')", "writes or changes files"),
    ("from pathlib import Path\nPath('x').write_text('y')", "writes or changes files"),
    ("m = 'w'\nopen('x', m)", "writes or changes files"),
    ("import subprocess\nsubprocess.run(['ls'])", "starts other programs"),
    ("import os\nos.system('ls')", "starts other programs"),
    ("from os import popen\npopen('ls')", "starts other programs"),
    ("import os as o\no.execv('/bin/ls', ['ls'])", "starts other programs"),
    ("import socket\nsocket.create_connection(('example.com', 80))", "opens network connections"),
    ("import urllib.request\nurllib.request.urlopen('http://x')", "opens network connections"),
    ("print(open('/home/me/.ssh/id_rsa').read())", "reads secret files"),
    ("print(open('.env').read())", "reads secret files"),
    ("print(open('/etc/shadow').read())", "reads secret files"),
    ("eval('1+1')", "builds code or names at run time"),
    ("__import__('os').system('ls')", "builds code or names at run time"),
    ("getattr(__import__('o'+'s'), 'sys'+'tem')('ls')", "builds code or names at run time"),
    ("().__class__.__bases__[0].__subclasses__()", "builds code or names at run time"),
    ("import ctypes", "loads native code"),
]
HARMLESS = [
    "print(sum(range(10)))",
    "import math\nprint(math.sqrt(2))",
    "items = [3, 1, 2]\nitems.remove(1)\nprint('a-b'.replace('-', '+'), sorted(items))",
    "import json\nprint(json.dumps({'a': 1}))",
    "print(open('data.csv').read())",
    "from pathlib import Path\nprint(Path('notes.txt').read_text())",
]


@pytest.mark.parametrize(("code", "finding"), RISKY)
def test_the_scan_names_what_risky_code_does(code: str, finding: str) -> None:
    assert any(f.startswith(finding) for f in scan_code(code).findings), scan_code(code)


@pytest.mark.parametrize("code", HARMLESS)
def test_the_scan_finds_nothing_in_harmless_code(code: str) -> None:
    assert scan_code(code).findings == []


async def test_harmless_code_runs_when_the_code_family_is_granted(tmp_path: Path) -> None:
    ctx, approver = setup(tmp_path, granted=True)
    text = await execute_code.execute({"code": "import os\nprint(6 * 7, os.getcwd())"}, ctx)
    assert "42" in text and str((tmp_path / "ws").resolve()) in text
    assert approver.asked == []


async def test_risky_code_asks_even_when_the_family_is_granted_and_runs_nothing_if_declined(tmp_path: Path) -> None:
    ctx, approver = setup(tmp_path, Answer(Decision.DECLINED), granted=True)
    (tmp_path / "ws" / "keep.txt").write_text("x")
    text = await execute_code.execute({"code": "import os\nos.remove('keep.txt')"}, ctx)
    assert approver.asked and approver.asked[0].saveable is False
    assert "deletes files" in approver.asked[0].reason
    assert (tmp_path / "ws" / "keep.txt").exists()
    assert ctx.refused and "didn't run it" in text


async def test_code_without_a_grant_asks_and_runs_when_approved(tmp_path: Path) -> None:
    ctx, approver = setup(tmp_path, Answer(Decision.APPROVED))
    text = await execute_code.execute({"code": "print('hello from the sandbox')"}, ctx)
    assert approver.asked[0].saveable is True
    assert "hello from the sandbox" in text


async def test_a_traceback_is_a_failure_the_model_can_read(tmp_path: Path) -> None:
    ctx, _ = setup(tmp_path, granted=True)
    text = await execute_code.execute({"code": "print(1/0)"}, ctx)
    assert ctx.failed and "ZeroDivisionError" in text


async def test_code_that_does_not_parse_is_not_run(tmp_path: Path) -> None:
    ctx, approver = setup(tmp_path)
    text = await execute_code.execute({"code": "print(("}, ctx)
    assert ctx.failed and "doesn't parse" in text and approver.asked == []


async def test_a_runaway_program_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    ctx, _ = setup(tmp_path, granted=True)
    text = await execute_code.execute({"code": "while True:\n    pass", "timeout": 1}, ctx)
    assert ctx.failed and "exit 124" in text


async def test_the_program_sees_no_secret_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-hidden")
    ctx, _ = setup(tmp_path, granted=True)
    text = await execute_code.execute({"code": "import os\nprint(sorted(os.environ))"}, ctx)
    assert "ANTHROPIC_API_KEY" not in text and "PATH" in text
