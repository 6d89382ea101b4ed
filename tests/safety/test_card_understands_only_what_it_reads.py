"""The card says "I can't tell everything this runs" for every form it does not read all the
way through (issue 50, item 4): an allowlist of understood invocations, not a list of tricks.

Each line below ran a file the card never showed in the issue's round (an option's value taken
for the script, an environment variable, a wrapper, another interpreter, a compiled copy…).
Through the real gate; the card is declined, so nothing runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_support import ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.asking import CANT_TELL
from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.gate import Gate
from companion.tools.action import shell


class Cards:
    def __init__(self, decision: Decision = Decision.DECLINED) -> None:
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(self.decision, always=True)


def write(ws: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        path.chmod(0o755)


RUN = {"run.sh": "echo run\n", "tool.py": "print('tool')\n", "env.sh": "echo sourced\n"}

NOT_UNDERSTOOD = [
    ("a script run by path whose first line names another interpreter",
     {"build.sh": "#!/usr/bin/perl\nprint 'x';\n"}, "./build.sh", "build.sh starts with"),
    ("a compiled program in the workspace", {"tool": b"\x7fELF\x02\x01\x01\x00" + b"\0" * 64}, "./tool",
     "compiled program"),
    ("an option's value taken for the script (bash)", RUN, "bash -o errexit run.sh", "options I don't follow"),
    ("an option's value taken for the script (python)", RUN, "python3 -W ignore tool.py", "options I don't follow"),
    ("a shell's options clustered with -c", RUN, "bash -ec 'sh run.sh'", "options I don't follow"),
    ("env -S", RUN, "env -S 'sh run.sh'", "env runs a command"),
    ("xargs", RUN, "echo run.sh | xargs sh", "xargs runs a command"),
    ("cd before a relative script", {"sub/run.sh": "echo sub\n"}, "cd sub && sh run.sh", "cd"),
    ("a script handed its own argument to run", {"run.sh": "sh \"$1\"\n", "step.sh": "echo step\n"},
     "sh run.sh step.sh", "names at run time"),
    ("BASH_ENV", RUN, "BASH_ENV=env.sh bash run.sh", "sets BASH_ENV"),
    ("PYTHONPATH with a sitecustomize", {**RUN, "sitecustomize.py": "print('site')\n"},
     "PYTHONPATH=. python3 tool.py", "sets PYTHONPATH"),
    ("python given a folder", {"app/__main__.py": "print('app')\n"}, "python3 app/", "folder or archive"),
    ("source of standard input", {"lib.sh": "echo lib\n"}, ". /dev/stdin < lib.sh", "can't read ahead"),
    ("a script named by a variable", RUN, "f=run.sh; sh $f", "names at run time"),
    ("node", {"tool.js": "require('./x')\n", "x.js": "1\n"}, "node tool.js", "node loads"),
    ("node -r", {"tool.js": "1\n", "x.js": "1\n"}, "node -r ./x.js tool.js", "node loads"),
    ("perl -I", {"tool.pl": "require Helper;\n"}, "perl -I. tool.pl", "perl loads"),
    ("awk -f", {"a.awk": "{print}\n", "b.awk": "BEGIN{system(\"id\")}\n"}, "awk -f a.awk -f b.awk x",
     "awk loads"),
    ("sed's e command", {"x": "1\n"}, "sed '1e id' x", "sed loads"),
    ("sed -f", {"x": "1\n", "s.sed": "1e id\n"}, "sed -f s.sed x", "sed loads"),
    ("find -exec", RUN, "find . -name run.sh -exec sh {} ;", "find"),
    ("npm run", {"package.json": '{"scripts": {"build": "sh run.sh"}}', **RUN}, "npm run build", "npm runs"),
    ("exec(open(...))", {"tool.py": "exec(open('x.py').read())\n", "x.py": "print(1)\n"}, "python3 tool.py",
     "decides at run time"),
    ("a compiled copy in __pycache__",
     {"tool.py": "import helper\n", "helper.py": "print('shown')\n",
      "__pycache__/helper.cpython-311.pyc": b"\0" * 16}, "python3 tool.py", "__pycache__ holds compiled code"),
    ("an extension module beside a pinned one",
     {"tool.py": "import helper\n", "helper.py": "print('shown')\n", "helper.so": b"\x7fELF"},
     "python3 tool.py", "helper.so may load instead"),
    ("a module beside the script named like one of Python's own",
     {"tool.py": "import http.server\n", "socketserver.py": "print('not the real one')\n"}, "python3 tool.py",
     "socketserver.py has the name of a module Python has elsewhere"),
    ("the same for -m", {"socketserver.py": "print('x')\n"}, "python3 -m http.server",
     "socketserver.py has the name of a module"),
    ("PATH set inside a script", {"run.sh": "PATH=.:$PATH\nls\n", "ls": "echo not ls\n"}, "sh run.sh", "sets PATH"),
    ("a shell script's own wrapper line", {"run.sh": "timeout 5 sh step.sh\n", "step.sh": "echo s\n"},
     "sh run.sh", "timeout runs a command"),
]


@pytest.mark.parametrize(("files", "line", "why"), [case[1:] for case in NOT_UNDERSTOOD],
                         ids=[case[0] for case in NOT_UNDERSTOOD])
async def test_a_form_the_card_does_not_read_through_says_it_cannot_tell_and_offers_no_always(
        gate: Gate, files: dict[str, str | bytes], line: str, why: str) -> None:
    write(gate.workspace, files)
    gate.approver = Cards()
    await shell.execute({"command": line}, ctx_for(gate, shell))
    card = gate.approver.asked[-1]
    assert CANT_TELL in card.reason and why in card.reason, card.reason
    assert not card.saveable


@pytest.mark.parametrize(("files", "line"), [
    ({"run.sh": "#!/bin/sh\nset -eu\n# a comment\necho hi\n. ./lib.sh\n", "lib.sh": "printf 'x\\n'\n"}, "./run.sh"),
    ({"run.sh": "echo hi\n"}, "sh run.sh"),
    ({"run.sh": "name=world\necho hello\n"}, "sh run.sh"),
    ({"tool.py": "import helper\nhelper.go()\n", "helper.py": "def go():\n    print(1)\n"}, "python3 -u tool.py"),
    ({"pkg/__init__.py": "", "pkg/tool.py": "print(1)\n"}, "python3 -m pkg.tool"),
])
async def test_a_form_it_reads_through_is_shown_without_doubt(gate: Gate, files: dict[str, str], line: str) -> None:
    write(gate.workspace, files)
    gate.approver = Cards()
    await shell.execute({"command": line}, ctx_for(gate, shell))
    card = gate.approver.asked[-1]
    assert CANT_TELL not in card.reason, card.reason


async def test_a_script_run_by_path_is_read_through_and_what_it_sources_runs_as_shown(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, {"build.sh": "#!/usr/bin/env bash\n. ./lib.sh\n", "lib.sh": "echo lib as shown\n"})
    gate.approver = Cards(Decision.APPROVED)
    verdict = await gate.review("./build.sh")
    assert "lib.sh" in verdict.permit.pins, verdict.permit.pins
    (ws / "lib.sh").write_text("echo swapped\n")  # as the user, not her: the card's copy runs
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert "lib as shown" in result.output and "swapped" not in result.output, result.output


async def test_python_dash_m_runs_the_package_init_it_showed(gate: Gate) -> None:
    ws = gate.workspace
    write(ws, {"pkg/__init__.py": "print('init as shown')\n", "pkg/tool.py": "print('tool')\n"})
    gate.approver = Cards(Decision.APPROVED)
    verdict = await gate.review("python3 -m pkg.tool")
    assert "pkg/__init__.py" in verdict.permit.pins
    (ws / "pkg/__init__.py").write_text("print('swapped')\n")
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert "init as shown" in result.output and "swapped" not in result.output, result.output
