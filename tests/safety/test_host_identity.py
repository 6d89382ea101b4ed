"""The sandbox's user owns nothing on the host, also when she runs as root (identity.py).

Through the real gate, the real tools and the real bubblewrap sandbox. As root the command
must be host uid 65534 (bwrap itself runs as 65534 and maps it through namespaces of its own),
so root's files are closed to it,
while the workspace stays its own through an idmapped mount and what it writes there lands on
disk as the workspace's owner.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from sandbox_support import Approves, ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.consent.approval import AuditLog
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore
from companion.safety.sandbox import identity
from companion.tools.action import execute_code, shell

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="as a user, the sandbox is that user: nothing of root's is mapped")

PRY = r"""
import os
print("uid map:", open("/proc/self/uid_map").read().split())
print("groups:", os.getgroups())
for path in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers"):
    if os.path.exists(path):
        try:
            open(path, "rb").close()
        except OSError as exc:
            print("refused", path, exc.strerror)
        else:
            print("OPENED", path)
"""


async def run_code(gate: Gate, code: str) -> str:
    return await execute_code.execute({"code": code}, ctx_for(gate, execute_code))


@as_root
async def test_approved_code_is_nobody_outside_too_and_cannot_open_root_only_files(gate: Gate) -> None:
    assert os.path.exists("/etc/shadow") and not os.stat("/etc/shadow").st_mode & 0o004  # root's alone here
    text = await run_code(gate, PRY)
    assert len(gate.approver.asked) == 1, text  # approved once: the most a "yes" gives
    inside, _parent, count = ast.literal_eval(text.split("uid map:", 1)[1].splitlines()[0].strip())
    assert (inside, count) == ("65534", "1"), text  # its parent is bwrap's own namespace, see below
    assert "OPENED" not in text and "refused /etc/shadow Permission denied" in text, text
    assert "refused /etc/gshadow Permission denied" in text, text
    assert "groups: [65534]" in text or "groups: []" in text, text  # root's group 0 is dropped


@as_root
async def test_every_process_of_a_sandboxed_call_is_nobody_on_the_host(gate: Gate) -> None:
    # Seen from the host, not through the namespaces' maps: bwrap and all under it, whoever maps what.
    verdict = gate.declared(["sh", "-c", "echo ready; exec cat"], tool="mcp:probe")
    process = await gate.start(verdict, risk="exec")
    try:
        assert (await process.stdout.readline()).strip() == b"ready", process.stderr_tail()
        tree = _tree_of(process.pid)
        assert len(tree) >= 3, tree  # bwrap's monitor, its pid 1, the command
        for pid, uids in tree.items():
            assert uids == ["65534"] * 4, (pid, tree)
    finally:
        await process.stop()


def _tree_of(leader: int) -> dict[int, list[str]]:
    """{pid: its real, effective, saved and filesystem uids} for `leader` and all under it."""
    found: dict[int, list[str]] = {}
    todo = [leader]
    while todo:
        pid = todo.pop()
        status = Path(f"/proc/{pid}/status").read_text()
        found[pid] = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
        todo += [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return found


@as_root
async def test_the_workspace_is_its_own_inside_and_what_it_writes_is_the_owner_s_outside(gate: Gate) -> None:
    ws = gate.workspace
    ws.chmod(0o700)  # only its owner (root) may enter: the idmapped mount makes the command that owner
    (ws / "private.txt").write_text("mine\n")
    (ws / "private.txt").chmod(0o600)
    text = await shell.execute({"command": "cat private.txt; echo made > new.txt; mkdir sub; stat -c '%u %n' ."},
                               ctx_for(gate, shell))
    assert "mine" in text and "65534 ." in text, text
    for made in (ws / "new.txt", ws / "sub"):
        info = made.stat()
        assert (info.st_uid, info.st_gid) == (ws.stat().st_uid, ws.stat().st_gid), made


@as_root
async def test_a_workspace_under_a_folder_only_root_may_enter_still_works(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    workspace = closed / "deeper" / "ws"
    workspace.mkdir(parents=True)
    closed.chmod(0o700)
    (workspace / "note.txt").write_text("inside\n")
    (closed / "beside.txt").write_text("beside\n")
    gate = Gate(workspace, GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))
    text = await shell.execute({"command": f"cat note.txt; ls -a {closed}; cat {closed}/beside.txt; id -u"},
                               ctx_for(gate, shell))
    assert "inside" in text and "65534" in text, text
    assert "beside" not in text.replace("beside.txt: No such file", ""), text


async def test_a_command_cannot_make_a_user_namespace_of_its_own(gate: Gate) -> None:
    # When the sandbox joins a namespace made for it, bwrap can't forbid nested ones: seccomp does.
    text = await shell.execute({"command": "unshare -U true && echo NESTED; python3 -c 'import threading as t; "
                                           "x = t.Thread(target=print, args=(\"threads work\",)); x.start(); x.join()'"},
                               ctx_for(gate, shell))
    assert "NESTED" not in text and "Operation not permitted" in text and "threads work" in text, text


def test_bwrap_sources_are_read_from_its_options_not_from_the_command() -> None:
    argv = ["bwrap", "--size", "9", "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr", "--ro-bind-data", "5",
            "/etc/x", "--bind", "/w", "/w", "--perms", "755", "--", "cmd", "--bind", "/nope", "/nope"]
    assert identity.bind_sources(argv) == ["/usr", "/w"]
