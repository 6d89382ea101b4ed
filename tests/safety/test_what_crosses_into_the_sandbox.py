"""Only what is listed crosses into the sandbox: no descriptor of hers or of the host's (issue 50, item 2).

The launcher that attaches the workspace and her interpreter as root used to hand their
open_tree(2) descriptors, and the call's user namespace, on to bwrap, which passes every
descriptor it doesn't know to the command: `..` from one of them walked the host's tree. Each
kind of sandboxed call lists its own descriptors and tries to climb out through them, through
the real tools, the real gate and the real bubblewrap; as root and again as a normal user (the
unprivileged pass runs tests/safety).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import Approves, ctx_for, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.config import McpServerSettings
from companion.safety.consent.approval import AuditLog
from companion.safety.gate import CODE_FAMILY, Gate
from companion.safety.grants import GrantStore
from companion.tools.action import execute_code, shell

SECRET = "SECRET-OUTSIDE-THE-WORKSPACE"
# Every descriptor number a leak could have taken: each one is tried as a way out.
_TRIED = range(3, 40)
_CLIMB = " ".join(f"/proc/self/fd/{n}/../victim-outside/secret.txt" for n in _TRIED)
# A lister's own open directory takes the lowest free number: 3 when nothing else is open.
_ONLY_STDIO = ["0", "1", "2", "3"]


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder every user may walk through, as most are (the workspace there needs no cover,
    so `..` from a descriptor of it is the host's own tree), holding the workspace and, beside
    it, a secret the sandbox's user could read if it got there."""
    folder = Path(tempfile.mkdtemp(prefix="companion-crossing-", dir="/var/tmp"))
    folder.chmod(0o755)
    (folder / "ws").mkdir()
    (folder / "victim-outside").mkdir(mode=0o755)
    (folder / "victim-outside" / "secret.txt").write_text(SECRET + "\n")
    (folder / "victim-outside" / "secret.txt").chmod(0o644)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def gate(place: Path, tmp_path: Path) -> Gate:
    """A gate whose approver says yes, on the workspace in `place`."""
    return Gate(place / "ws", GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))


def _listed(text: str) -> list[str]:
    """The descriptor numbers between the markers a command printed."""
    return text.split("FDS<", 1)[1].split(">FDS", 1)[0].split()


async def test_granted_code_holds_only_stdin_stdout_and_stderr_and_cannot_climb_out(gate: Gate) -> None:
    gate.grant_family(CODE_FAMILY)
    # /dev/fd (a link to /proc/self/fd) is not among the paths the scan calls secret: the scan
    # explains a card, the kernel is the wall.
    code = ("import os\n"
            "print('FDS<', *sorted(os.listdir('/dev/fd'), key=int), '>FDS')\n"
            f"for n in range({_TRIED.start}, {_TRIED.stop}):\n"
            "    try:\n"
            "        print(open(f'/dev/fd/{n}/../victim-outside/secret.txt').read())\n"
            "    except OSError:\n"
            "        pass\n")
    text = await execute_code.execute({"code": code}, ctx_for(gate, execute_code))
    assert gate.approver.asked == [], text  # granted: ran read-only, unasked
    assert _listed(text) == _ONLY_STDIO and SECRET not in text, text


async def test_a_family_granted_command_holds_only_stdio_and_cannot_climb_out(gate: Gate) -> None:
    for family in ("ls", "cat"):
        gate.grant_family(family)
    text = await shell.execute({"command": "ls /proc/self/fd"}, ctx_for(gate, shell))
    assert gate.approver.asked == [], text
    assert text.split()[:4] == _ONLY_STDIO and text.split()[4] == "[exit", text
    text = await shell.execute({"command": f"cat {_CLIMB}"}, ctx_for(gate, shell))
    assert gate.approver.asked == [] and SECRET not in text, text


async def test_an_approved_command_line_holds_only_stdio_and_cannot_climb_out(gate: Gate) -> None:
    line = (f"echo 'FDS<' $(ls /proc/self/fd) '>FDS'; echo 'PID1<' $(readlink /proc/1/fd/*) '>PID1'; "
            f"cat {_CLIMB} 2>/dev/null; echo checked")
    text = await shell.execute({"command": line}, ctx_for(gate, shell))
    assert len(gate.approver.asked) == 1 and "checked" in text, text  # approved once, writable
    assert _listed(text) == _ONLY_STDIO and SECRET not in text, text
    # bwrap's own first process, whose descriptors the command may read (same user): stdio and
    # the eventfd bwrap keeps to hear from its monitor.
    held = text.split("PID1<", 1)[1].split(">PID1", 1)[0].split()
    assert held and all(t == "/dev/null" or t.startswith(("pipe:", "anon_inode:[eventfd]")) for t in held), text


async def test_a_declared_mcp_server_holds_only_stdio_and_cannot_climb_out(gate: Gate) -> None:
    from companion.mcp.launch import sandboxed_starter  # how the MCP manager starts a server

    server = McpServerSettings(name="fds", command="sh", args=(
        "-c", f"echo FDS\\< $(ls /proc/self/fd) \\>FDS; cat {_CLIMB} 2>/dev/null; echo checked"))
    process = await sandboxed_starter(gate)(server)
    try:
        text = (await process.stdout.read()).decode()
    finally:
        await process.stop()
    assert "checked" in text, (text, process.stderr_tail())
    assert _listed(text) == _ONLY_STDIO and SECRET not in text, text


async def test_no_signal_python_ignores_is_handed_on_to_the_command(gate: Gate) -> None:
    # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec: the
    # Python helpers on the way (Landlock's, the launcher's) handed that on, so `yes | head -1`
    # ended with "Broken pipe" and a write past the file size limit failed instead of stopping.
    gate.grant_family("cat")
    read_only = await shell.execute({"command": "cat /proc/self/status"}, ctx_for(gate, shell))
    writable = await shell.execute({"command": "cat /proc/self/status; true"}, ctx_for(gate, shell))
    assert len(gate.approver.asked) == 1, writable  # the second one was approved once
    for text in (read_only, writable):
        ignored = int(next(line.split()[1] for line in text.splitlines() if line.startswith("SigIgn:")), 16)
        assert not ignored & (1 << (13 - 1) | 1 << (25 - 1)), text  # SIGPIPE, SIGXFSZ
