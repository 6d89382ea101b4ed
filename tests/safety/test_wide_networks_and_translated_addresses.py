"""Issue 50, item 6: a network this computer is connected to is the local network whatever its
width, and an IPv6 address that carries an IPv4 one is judged by that IPv4 address.

The wide network is real: a veth pair whose far end, in a network namespace of its own, listens
on a /7 this computer is connected to; an approved networked command tries to reach it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sandbox_support import ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.gate import Gate
from companion.safety.network import fence
from companion.safety.network.netguard import is_public_address
from companion.tools.action import shell

WIDE_HERE, WIDE_THERE = "6.0.0.1/7", "6.1.2.3/7"
"""A /7 (wider than any /8) this computer is connected to, and a machine on it."""

_LISTENER = r"""
import socket, sys
print("inside", flush=True)
sys.stdin.readline()
server = socket.create_server(("0.0.0.0", 0))
print(server.getsockname()[1], flush=True)
conn, peer = server.accept()
print("ACCEPTED", flush=True)
"""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@contextmanager
def wide_neighbour() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A listener on a machine of a /7 this computer is connected to; removed on the way out."""
    process = subprocess.Popen(["unshare", "--net", sys.executable, "-c", _LISTENER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    here = f"wd{os.getpid() % 100000}h"
    try:
        assert process.stdin is not None and process.stdout is not None
        assert process.stdout.readline() == "inside\n"
        _ip("link", "add", here, "type", "veth", "peer", "name", "far", "netns", str(process.pid))
        _ip("addr", "add", WIDE_HERE, "dev", here)
        _ip("link", "set", here, "up")
        inside = ["nsenter", f"--net=/proc/{process.pid}/ns/net", "ip"]
        for args in (["addr", "add", WIDE_THERE, "dev", "far"], ["link", "set", "far", "up"]):
            subprocess.run([*inside, *args], check=True, capture_output=True)
        process.stdin.write("go\n")
        process.stdin.flush()
        yield process, int(process.stdout.readline())
    finally:
        subprocess.run(["ip", "link", "del", here], capture_output=True)
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.skipif(os.geteuid() != 0, reason="a network of its own on a veth pair is only root's to wire up")
async def test_a_connected_network_wider_than_a_slash_8_is_out_of_a_networked_command_s_reach(gate: Gate) -> None:
    with wide_neighbour() as (neighbour, port):
        there = WIDE_THERE.split("/")[0]
        code = ("import socket\n"
                "try:\n"
                f"    socket.create_connection(('{there}', {port}), timeout=3).close(); print('REACHED')\n"
                "except OSError as exc: print('refused', exc)\n")
        text = await shell.execute({"command": f"python3 -c {shlex.quote(code)}", "network": True},
                                   ctx_for(gate, shell))
        neighbour.kill()
        heard, _ = neighbour.communicate(timeout=5)
    assert "refused [Errno 13] Permission denied" in text, text
    assert "ACCEPTED" not in heard


def test_every_interface_s_network_is_fenced_whatever_its_width(monkeypatch: pytest.MonkeyPatch) -> None:
    # An interface's own network is the local network; a wide one only needs to leave slirp's own
    # 10.0.2.0/24 its more specific route (a narrower one inside it would cut slirp's gateway off).
    monkeypatch.setattr(fence, "interface_networks", lambda: ["6.0.0.0/7", "0.0.0.0/4", "10.0.2.0/25", "10.0.2.0/24"])
    monkeypatch.setattr(fence, "connected_subnets", lambda: [])
    monkeypatch.setattr(fence, "host_addresses", lambda: [])
    prefixes = fence.fenced_prefixes()
    assert {"6.0.0.0/7", "0.0.0.0/4"} <= set(prefixes)
    assert "10.0.2.0/25" not in prefixes and "10.0.2.0/24" not in prefixes


def test_this_computer_s_own_interfaces_are_read_from_the_kernel() -> None:
    # The loopback's 127.0.0.1/8 is always there; every network read is a valid prefix.
    found = fence.interface_networks()
    assert "127.0.0.0/8" in found, found


# --- IPv4 inside IPv6 ---------------------------------------------------------------------

# Where RFC 6052 puts the IPv4 address inside the local-use prefix 64:ff9b:1::/48 is the
# network's choice (/48, /56, /64 or /96), so an address there can't be read for certain.
@pytest.mark.parametrize("address", [
    # 127.0.0.1 and 192.168.1.1 in the /48 layout, 8.8.8.8 where the /96 layout reads it
    "64:ff9b:1:7f00:0:100:808:808", "64:ff9b:1:c0a8:1:100:808:808",
    "64:ff9b:1:0:7f:0:100:0",  # 127.0.0.1 in the /64 layout, 1.0.0.0 in the /96 one
    "64:ff9b:1::808:808",  # even 8.8.8.8 in the /96 layout: 0.0.0.0 in the /48 one
    "64:ff9b::c0a8:101",  # the well-known /96: 192.168.1.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, the client 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 around 169.254.169.254
    "::ffff:10.0.0.1",
])
def test_an_address_whose_ipv4_inside_is_not_public_or_not_certain_is_refused(address: str) -> None:
    assert not is_public_address(address)


def test_an_address_carrying_a_public_ipv4_one_through_the_well_known_nat64_prefix_is_public() -> None:
    # (Whether 6to4's 2002::/16 is public at all differs between Python releases: 3.11.2 says no.)
    assert is_public_address("64:ff9b::808:808")
