"""The smaller holes of issue 33, each through the real code: addresses embedded in IPv6, family
grants off the built-in list, FIFOs written from a read-only run, world-writable folders from
auto-safe lines, another user's listener on the single-instance socket, and a line break in a
path written into the desktop entry. (The fence's connected subnets: test_red_team.py; an MCP
tool without annotations on a trusted server: test_mcp_unannotated.py.)"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sandbox_support import Approves, ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.consent.approval import ACCESS_READ
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore
from companion.safety.network.netguard import is_public_address
from companion.safety.sandbox.door import ProcessDoor
from companion.tools.action import shell

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another local user (uid 65534)")


# --- IPv4 inside IPv6 ----------------------------------------------------------------------

@pytest.mark.parametrize("address", ["::ffff:0:7f00:1", "64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:7f00:1::",
                                     "2002:c0a8:101::1", "::7f00:1", "::ffff:127.0.0.1", "64:ff9b:1::a9fe:a9fe"])
def test_an_ipv6_address_carrying_a_private_ipv4_one_is_not_public(address: str) -> None:
    assert not is_public_address(address)


def test_an_ipv6_address_carrying_a_public_ipv4_one_is_still_public() -> None:
    assert is_public_address("64:ff9b::808:808") and is_public_address("2606:4700:4700::1111")


# --- families ------------------------------------------------------------------------------

def test_hand_edited_families_off_the_built_in_list_are_dropped_and_each_is_named(tmp_path: Path) -> None:
    hostile = ["rbash", "tmux", "screen", "gdb", "expect", "ipython3", "python3-dbg", "*", "rg", "sort"]
    path = tmp_path / "approvals.toml"
    path.write_text("families = [" + ", ".join(f'"{x}"' for x in ["git", *hostile]) + "]\n")
    store = GrantStore(path)
    assert store.current().families == ("git",)
    for family in hostile:
        assert family in (store.notice or ""), (family, store.notice)
    gate = Gate(tmp_path / "ws", store)
    (tmp_path / "ws").mkdir()
    assert gate.precheck("tmux new-session -d 'rm -rf sub'").how == "ask"


# --- a read-only run and a FIFO ------------------------------------------------------------

FIFO_LINE = "timeout 5 sh -c 'echo FROM-THE-SANDBOX > pipe' && echo WROTE; echo scratch > \"${TMPDIR:-/tmp}/x\" && cat \"${TMPDIR:-/tmp}/x\""


async def fifo_run(workspace: Path) -> tuple[str, bytes]:
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    # A program of the user's reading it (opened first, so a writer wouldn't block).
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        door = ProcessDoor(lambda: workspace, lambda: None)
        permit = door.issue(("bash", "-c", FIFO_LINE), FIFO_LINE, "shell", stdin=None, network=False,
                            how="auto-safe", access=ACCESS_READ)
        result = await door.run(permit, risk="exec", timeout_s=30)
        try:
            got = os.read(reader, 100)
        except BlockingIOError:
            got = b""
    finally:
        os.close(reader)
    return result.output, got


async def test_a_read_only_run_cannot_write_into_a_fifo_in_the_workspace(gate: Gate) -> None:
    text, got = await fifo_run(gate.workspace)
    assert got == b"" and "WROTE" not in text and "Permission denied" in text, (text, got)
    assert "scratch" in text  # its scratch folder still takes files (here /dev/shm: the workspace is in /tmp)


async def test_outside_tmp_a_read_only_run_keeps_tmp_but_not_the_fifo() -> None:
    workspace = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="companion-test-"))
    try:
        text, got = await fifo_run(workspace)
        assert got == b"" and "WROTE" not in text and "scratch" in text, (text, got)
    finally:
        shutil.rmtree(workspace)


# --- folders nobody else may write ---------------------------------------------------------

async def test_auto_safe_mkdir_makes_private_folders_and_a_mode_asks(gate: Gate) -> None:
    assert gate.precheck("mkdir -m 777 open").how == "ask"
    assert gate.precheck("mkdir --mode=1777 open").how == "ask"
    text = await shell.execute({"command": "mkdir -p made/deeper"}, ctx_for(gate, shell))
    assert gate.approver.asked == [], text
    for folder in (gate.workspace / "made", gate.workspace / "made" / "deeper"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, oct(folder.stat().st_mode)


# --- the single-instance socket ------------------------------------------------------------

LISTENER = r"""
import socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(4)
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    print("CONNECTED", flush=True)
    conn.close()
"""


def listen_as_nobody(path: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(["/usr/bin/python3", "-I", "-c", LISTENER, path], user=65534, group=65534,
                               extra_groups=[], stdout=subprocess.PIPE, text=True, cwd="/")
    assert process.stdout is not None and process.stdout.readline() == "listening\n"
    return process


@as_root
def test_another_user_listening_first_on_the_old_name_does_not_stop_her_starting(qtbot, tmp_path: Path,
                                                                                monkeypatch) -> None:
    from companion.ui.desktop.single_instance import SingleInstance, server_name

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    config = tmp_path / "config"
    name = server_name(config)
    # Where the name used to resolve: straight in /tmp, where any local user may listen first.
    old = os.path.join(tempfile.gettempdir(), os.path.basename(name))
    squatter = listen_as_nobody(old)
    try:
        first = SingleInstance(server_name(config))
        assert not first.hand_over()  # nobody of hers is running: she starts
        assert first.listen()
        with qtbot.waitSignal(first.raise_requested, timeout=5000):
            assert SingleInstance(server_name(config)).hand_over()
        first.close()
        folder = os.path.dirname(name)
        assert os.stat(folder).st_uid == os.getuid() and not os.stat(folder).st_mode & 0o077
    finally:
        squatter.kill()
        squatter.wait()
        os.unlink(old)


@as_root
def test_she_never_hands_over_to_a_listener_of_another_user(qtbot) -> None:
    from companion.ui.desktop.single_instance import SingleInstance

    shared = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="companion-test-"))
    shared.chmod(0o777)  # a folder another user may listen in: only the peer check is left
    path = str(shared / "instance")
    squatter = listen_as_nobody(path)
    try:
        assert not SingleInstance(path).hand_over()
    finally:
        squatter.kill()
        squatter.wait()
        shutil.rmtree(shared)


# --- the desktop entry ---------------------------------------------------------------------

def test_a_line_break_in_the_settings_folder_refuses_the_desktop_entry(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / "cfg\nExec=sh -c 'touch /tmp/owned'\n"
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": "", "XDG_CONFIG_HOME": "", "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-m", "companion.cli", "--config-dir", str(config), "install-desktop",
                           "--autostart"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "control or hidden character" in done.stderr, done.stderr
    assert "cfg\\nExec=" in done.stderr  # the path is shown with the line break spelled out
    entries = list(home.rglob("*.desktop"))
    assert entries == [], entries
    assert not (config / "settings.toml").exists() or "start_at_login = true" not in (config / "settings.toml").read_text()
