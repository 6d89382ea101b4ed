"""Escape attempts through the real tools and the real bubblewrap sandbox: every one must fail.

The model is the attacker here: each command or program below was approved by the user (or
covered by a grant), so only the kernel sandbox stands between it and the machine.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shlex
import socket
import sys
from pathlib import Path

import pytest
from fake_internet import PUBLIC, fake_internet
from places import HELPERS
from sandbox_support import Approves, ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.gate import CODE_FAMILY, Gate
from companion.safety.sandbox import sandbox
from companion.tools.action import execute_code, shell


async def run_shell(gate: Gate, command: str) -> str:
    return await shell.execute({"command": command}, ctx_for(gate, shell))


async def run_code(gate: Gate, code: str) -> str:
    return await execute_code.execute({"code": code}, ctx_for(gate, execute_code))


# --- writing outside the workspace ------------------------------------------------------


async def test_an_approved_command_cannot_write_outside_the_workspace(gate: Gate, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    text = await run_shell(gate, f"echo pwned > {outside}; echo pwned > /usr/pwned-{secrets.token_hex(4)}; "
                                 "echo inside > inside.txt")
    assert not outside.exists()
    assert "Read-only file system" in text
    assert (gate.workspace / "inside.txt").read_text() == "inside\n"


async def test_approved_code_cannot_write_outside_the_workspace(gate: Gate, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    code = (f"import pathlib\npathlib.Path({str(outside)!r}).write_text('pwned')\n"
            "print(pathlib.Path('/tmp').exists())")
    await run_code(gate, code)
    assert not outside.exists()


async def test_granted_scan_clean_code_cannot_write_outside_the_workspace(gate: Gate, tmp_path: Path) -> None:
    gate.grant_family(CODE_FAMILY)
    target = Path.home() / f".companion-sandbox-test-{secrets.token_hex(4)}"
    code = f"import io\nio.FileIO({str(target)!r}, 'w').write(b'pwned')"
    try:
        text = await run_code(gate, code)
        assert not target.exists()
        assert "Read-only file system" in text
        assert gate.audit.runs()[-1]["ran"]["sandboxed"] is True
    finally:
        target.unlink(missing_ok=True)


# --- reading what is not hers -----------------------------------------------------------


async def test_an_approved_command_cannot_read_a_file_in_the_real_home(gate: Gate) -> None:
    secret = secrets.token_hex(8)
    target = Path.home() / f".companion-sandbox-secret-{secrets.token_hex(4)}"
    target.write_text(secret)
    try:
        text = await run_shell(gate, f"cat {target}; ls -a ~")
        assert secret not in text
        assert "No such file or directory" in text
        assert target.name not in text.split("\n", 1)[1]  # not in the listing of ~
    finally:
        target.unlink()


VICTIM = """
import asyncio, sys
sys.path[:0] = {paths!r}
from pathlib import Path
from test_sandbox_escapes import Approves, ctx_for, run_code, run_shell
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore
gate = Gate(Path({ws!r}), GrantStore(Path({ws!r}).parent / "approvals.toml"), approver=Approves())
print(asyncio.run(run_code(gate, sys.argv[1])))
print(asyncio.run(run_shell(gate, "cat /proc/$PPID/environ /proc/1/environ; echo $PPID")))
"""
PRY = """
import os
found = []
for pid in [os.getppid(), *os.listdir('/proc')]:
    try:
        found.append(open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace'))
    except OSError as exc:
        found.append(str(exc))
print(len(found), 'processes looked at')
print('\\n'.join(found))
"""


async def test_code_cannot_read_her_environment_through_proc(gate: Gate) -> None:
    # She runs as a process started with the key in its environment, as a user starts her.
    key = "sk-" + secrets.token_hex(12)
    script = VICTIM.format(paths=[str(HELPERS), str(Path(__file__).parent)], ws=str(gate.workspace))
    env = {**os.environ, "COMPANION_API_KEY": key}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, PRY, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    text = out.decode()
    assert "processes looked at" in text and "[exit 0]" in text, text
    assert key not in text


# --- nothing outlives the call ----------------------------------------------------------


def _pids_running(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    found.append(int(name))
            except OSError:
                pass
    return found


async def _ended(pid: int, within_s: float = 5.0) -> bool:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    loop = asyncio.get_running_loop()
    gone = loop.create_future()
    loop.add_reader(fd, lambda: gone.done() or gone.set_result(True))
    try:
        return await asyncio.wait_for(gone, within_s)
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
        os.close(fd)


# Each one says it is running (the `ready` file) before the command returns, so the
# process has left the command's session and group by the time the call ends.
@pytest.mark.parametrize("how", [
    "setsid sh -c 'echo $$ > ready; exec sleep {marker}' > /dev/null 2>&1 &",
    "( ( sh -c 'echo $$ > ready; exec sleep {marker}' > /dev/null 2>&1 & ) & )",
    "nohup setsid sh -c 'echo $$ > ready; exec sleep {marker}' > /dev/null 2>&1 & disown",
])
async def test_a_detached_or_double_forked_process_does_not_outlive_the_call(gate: Gate, how: str) -> None:
    marker = f"{3000 + secrets.randbelow(999)}.{secrets.randbelow(10**6):06d}"
    wait_ready = "while [ ! -s ready ]; do sleep 0.01; done"
    text = await run_shell(gate, how.format(marker=marker) + f"\n{wait_ready}; echo started")
    assert text.endswith("started\n[exit 0]"), text
    survivors = _pids_running(marker)
    for pid in survivors:
        assert await _ended(pid), f"process {pid} (sleep {marker}) outlived the call"


# --- no network -------------------------------------------------------------------------


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def _connected(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()  # the kernel queues a finished handshake before accept
    except BlockingIOError:
        return False
    conn.close()
    return True


async def test_granted_code_cannot_reach_a_loopback_listener(gate: Gate, listener: socket.socket) -> None:
    gate.grant_family(CODE_FAMILY)
    port = listener.getsockname()[1]
    # Scan-clean (logging is not "network" to the scan), so the grant covers it without asking.
    code = ("import logging, logging.handlers\n"
            f"handler = logging.handlers.SocketHandler('127.0.0.1', {port})\n"
            "handler.createSocket()\n"
            "print('connected' if handler.sock else 'no connection')\n")
    text = await run_code(gate, code)
    assert gate.approver.asked == []
    assert "no connection" in text
    assert not _connected(listener)


async def test_approved_code_and_commands_have_no_network_by_default(gate: Gate, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    text = await run_code(gate, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)")
    assert "ConnectionRefusedError" in text or "unreachable" in text
    text = await run_shell(gate, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
    assert "connected" not in text.replace("not connected", "")
    assert not _connected(listener)


@pytest.fixture
def abstract_listener():
    server = socket.socket(socket.AF_UNIX)
    name = f"companion-test-{secrets.token_hex(6)}"
    server.bind("\0" + name)  # an X-server-style abstract socket: no file, only a name
    server.listen(8)
    server.setblocking(False)
    yield server, name
    server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the stand-in internet is a network namespace only root may wire up")
async def test_a_command_approved_with_the_internet_card_reaches_the_network_through_slirp(gate: Gate) -> None:
    ctx = ctx_for(gate, shell)
    with fake_internet() as internet:
        text = await shell.execute({"command": f"exec 3<>/dev/tcp/{PUBLIC}/{internet.port} && echo connected; "
                                               "cat /etc/resolv.conf", "network": True}, ctx)
        assert internet.accepted() == [PUBLIC]
    asked = gate.approver.asked[-1]
    assert "This needs the internet." in asked.reason and asked.saveable is False
    assert "connected" in text and "nameserver 10.0.2.3" in text, text
    assert gate.audit.runs()[-1]["ran"]["network"] is True


async def test_a_networked_command_cannot_reach_her_loopback_listeners_or_abstract_sockets(
        gate: Gate, listener: socket.socket, abstract_listener) -> None:
    port = listener.getsockname()[1]
    server, name = abstract_listener
    code = ("import socket\n"
            f"for host in ('127.0.0.1', '10.0.2.2'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=3); print('REACHED', host)\n"
            "    except OSError as exc: print(host, exc)\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "try:\n"
            f"    s.connect('\\0{name}'); print('REACHED abstract')\n"
            "except OSError as exc: print('abstract', exc)\n")
    text = await shell.execute({"command": f"python3 -c {shlex.quote(code)}", "network": True},
                               ctx_for(gate, shell))
    if (why := sandbox.network_unavailable_reason()) is not None:
        # Where slirp4netns can't run (a user for whom /dev/net/tun is narrowed) it doesn't run at
        # all: it is never given her own network instead.
        assert why in text and "REACHED" not in text, text
        assert not _connected(listener)
        return
    assert "REACHED" not in text and "abstract" in text, text
    assert not _connected(listener)
    with pytest.raises(BlockingIOError):
        server.accept()
