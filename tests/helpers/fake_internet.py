"""A host "on the internet" for networked-sandbox tests: a network namespace behind a veth pair.

There is no internet in CI, and this machine's own addresses are (rightly) out of a networked
sandbox's reach, so "the internet" is another network namespace holding a public-looking
address (203.0.113.2, TEST-NET-3) behind a gateway, as the internet is (the networks this
computer is connected to are fenced off too), and a private one (192.168.77.2, a machine on the
LAN), with a TCP listener on both. Needs root and iproute2 (scripts/system-deps.sh).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PUBLIC = "203.0.113.2"
"""An address slirp should carry a networked command to."""
LAN = "192.168.77.2"
"""A machine on the local network: out of reach."""
HOST_SIDE = "198.51.100.1"
"""This computer's own address on the link: out of reach too (it is this computer)."""
NEIGHBOUR = "198.51.100.2"
"""A machine on a network this computer is connected to (on test addresses, not private ones):
out of reach; it is also the gateway to PUBLIC."""

_SERVER = r"""
import socket, sys
print("inside", flush=True)  # unshare has made the namespace before it ran this
sys.stdin.readline()  # the addresses are up
server = socket.create_server(("0.0.0.0", 0))
print(server.getsockname()[1], flush=True)
while True:
    conn, peer = server.accept()
    print("ACCEPTED", conn.getsockname()[0], flush=True)
    conn.close()
"""


@dataclass
class Internet:
    port: int
    process: subprocess.Popen[str]

    def accepted(self, *, expected: int = 1, timeout_s: float = 10.0) -> list[str]:
        """The addresses a connection arrived at (ends the listener; call once, at the end).
        A client that connected is in the listener's backlog before the listener has accepted
        it, so this first waits (up to `timeout_s`) for the `expected` number to be reported;
        more are still counted, as they must be to fail a test that expects fewer."""
        assert self.process.stdout is not None
        lines: list[str] = []
        give_up = threading.Timer(timeout_s, self.process.kill)  # ends the read below with EOF
        give_up.start()
        try:
            while sum(line.startswith("ACCEPTED") for line in lines) < expected:
                line = self.process.stdout.readline()
                if not line:
                    break
                lines.append(line)
        finally:
            give_up.cancel()
        self.process.kill()
        out, _ = self.process.communicate(timeout=5)
        lines.extend(out.splitlines())
        return [line.split()[1] for line in lines if line.startswith("ACCEPTED")]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@contextmanager
def fake_internet() -> Iterator[Internet]:
    """Start the far side and wire it to this computer; everything is removed on the way out."""
    process = subprocess.Popen(["unshare", "--net", sys.executable, "-c", _SERVER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    here = f"rt{os.getpid() % 100000}h"
    try:
        assert process.stdin is not None and process.stdout is not None
        assert process.stdout.readline() == "inside\n"  # wired earlier, the link would land here
        _ip("link", "add", here, "type", "veth", "peer", "name", "far", "netns", str(process.pid))
        _ip("addr", "add", f"{HOST_SIDE}/24", "dev", here)
        _ip("addr", "add", "192.168.77.1/24", "dev", here)
        _ip("link", "set", here, "up")
        inside = ["nsenter", f"--net=/proc/{process.pid}/ns/net", "ip"]
        for args in (["addr", "add", f"{NEIGHBOUR}/24", "dev", "far"], ["addr", "add", f"{PUBLIC}/24", "dev", "far"],
                     ["addr", "add", f"{LAN}/24", "dev", "far"], ["link", "set", "far", "up"],
                     ["link", "set", "lo", "up"]):
            subprocess.run([*inside, *args], check=True, capture_output=True)
        _ip("route", "add", f"{PUBLIC}/32", "via", NEIGHBOUR, "dev", here)
        process.stdin.write("go\n")
        process.stdin.flush()
        yield Internet(int(process.stdout.readline()), process)
    finally:
        subprocess.run(["ip", "link", "del", here], capture_output=True)
        if process.poll() is None:
            process.kill()
            process.communicate()
