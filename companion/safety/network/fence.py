"""Keep this computer and its local network out of a networked sandbox's reach: prohibit routes.

slirp4netns carries a connection to any address the sandbox names, including this computer's
own outside address (where a service listening on 0.0.0.0 answers) and the machines on the
local network (a router's admin page, a printer, a NAS). "The internet only" means those are
out of reach, so before the command runs, its network namespace gets a `prohibit` route for
every address of this computer and for the private, link-local, shared and multicast
ranges; a connection there fails with "Permission denied". slirp's own 10.0.2.0/24 (its
gateway, which `--disable-host-loopback` already refuses, and its DNS forwarder) keeps its
more specific route. Every network this computer is connected to is fenced too, whatever its
range: a LAN on public or test addresses is still the local network. Each interface's own
network counts whatever its width (a /7 LAN is a LAN); a route with no gateway counts from /8
down (a VPN's 0/1 and 128/1 halves of the internet, routed onto its tunnel, are the internet). The command can't remove the routes: it has no capabilities in its
namespaces and may not make new ones.

Run as a program (`python -I -S fence.py NETNS [USERNS_FD] < prefixes`), stdlib only, because
entering another user namespace (needed when she is not root) is refused to a process with
threads. It speaks rtnetlink itself: iproute2 is not on every machine that has slirp4netns.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import socket
import struct
import sys

__all__ = ["FENCED_RANGES", "connected_subnets", "fenced_prefixes", "host_addresses", "interface_networks", "main"]

FENCED_RANGES = ("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
                 "172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/3")
"""This host, private networks (RFC 1918), shared address space (CGNAT), link-local (cloud
metadata at 169.254.169.254), multicast and the reserved block above it."""

_SLIRP_OWN = ("10.0.2.2", "10.0.2.3")
_SLIRP_NETWORK = ipaddress.IPv4Network("10.0.2.0/24")
_RTF_GATEWAY = 0x2
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_RTM_NEWROUTE, _RTM_NEWADDR, _RTM_GETADDR = 24, 20, 22
_NLM_F_REQUEST, _NLM_F_ACK, _NLM_F_DUMP, _NLM_F_EXCL, _NLM_F_CREATE = 0x1, 0x4, 0x300, 0x200, 0x400
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_IFA_ADDRESS = 1
_RT_TABLE_MAIN, _RTPROT_STATIC, _RT_SCOPE_UNIVERSE, _RTN_PROHIBIT = 254, 4, 0, 8
_RTA_DST = 1


def host_addresses(fib_trie: str = "/proc/net/fib_trie") -> list[str]:
    """Every IPv4 address of this computer (the kernel's LOCAL /32 entries), loopback aside."""
    found: list[str] = []
    last = ""
    try:
        with open(fib_trie, encoding="ascii", errors="replace") as table:
            for line in table:
                text = line.strip()
                if text.startswith(("|--", "+--")):
                    last = text.split()[1]
                elif text == "/32 host LOCAL" and last and not last.startswith("127.") and last not in found:
                    found.append(last)
    except OSError:
        pass
    return found


def connected_subnets(route_table: str = "/proc/net/route") -> list[str]:
    """Every network this computer is connected to (a route with no gateway: the subnet of
    each interface), as prefixes; none wider than /8 (a VPN's 0/1 and 128/1 halves of the
    internet are the internet) nor overlapping slirp's own 10.0.2.0/24."""
    found: list[str] = []
    try:
        with open(route_table, encoding="ascii", errors="replace") as table:
            rows = [line.split() for line in table.readlines()[1:]]
    except OSError:
        return found
    for row in rows:
        if len(row) < 8 or row[0] == "lo" or int(row[3], 16) & _RTF_GATEWAY:
            continue
        try:
            destination, mask = (ipaddress.IPv4Address(struct.pack("<I", int(row[i], 16))) for i in (1, 7))
            network = ipaddress.IPv4Network(f"{destination}/{mask}", strict=False)
        except ValueError:
            continue
        if network.prefixlen >= 8 and not network.overlaps(_SLIRP_NETWORK) and str(network) not in found:
            found.append(str(network))
    return found


def interface_networks() -> list[str]:
    """The network of each IPv4 address of this computer's interfaces, as the kernel has them
    (rtnetlink), whatever its width."""
    found: list[str] = []
    request = struct.pack("=IHHII", 24, _RTM_GETADDR, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0)
    request += struct.pack("=BBBBI", socket.AF_INET, 0, 0, 0, 0)  # struct ifaddrmsg: every IPv4 one
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as link:
        link.send(request)
        while True:
            reply = link.recv(65536)
            offset = 0
            while offset + 16 <= len(reply):
                length, kind = struct.unpack_from("=IH", reply, offset)
                if kind in (_NLMSG_DONE, _NLMSG_ERROR) or length < 16:
                    return found
                if kind == _RTM_NEWADDR:
                    network = _address_network(reply[offset + 16:offset + length])
                    if network is not None and network not in found:
                        found.append(network)
                offset += (length + 3) & ~3


def _address_network(message: bytes) -> str | None:
    """The network of one RTM_NEWADDR message's address (IFA_ADDRESS: the peer's on a point-to-point link)."""
    _family, prefixlen = struct.unpack_from("=BB", message)
    offset = 8
    while offset + 4 <= len(message):
        length, kind = struct.unpack_from("=HH", message, offset)
        if length < 4:
            return None
        if kind == _IFA_ADDRESS and length == 8:
            address = ipaddress.IPv4Address(message[offset + 4:offset + 8])
            return str(ipaddress.IPv4Network(f"{address}/{prefixlen}", strict=False))
        offset += (length + 3) & ~3
    return None


def fenced_prefixes() -> list[str]:
    """The ranges above, every network this computer is connected to, and its own addresses,
    each as a prefix."""
    # Each of this computer's addresses as its own /32 even inside a fenced range: a host on a
    # 10.0.2.x network (VirtualBox's NAT gives 10.0.2.15) would otherwise fall under slirp's
    # more specific 10.0.2.0/24. slirp's own gateway and DNS forwarder stay reachable.
    prefixes = list(FENCED_RANGES)
    # A network that holds slirp's 10.0.2.0/24 leaves it its more specific route; one inside it
    # would cut slirp's gateway off (this computer's own addresses there are fenced below).
    try:
        own = interface_networks()
    except OSError:
        own = []
    prefixes += [net for net in own if not ipaddress.IPv4Network(net).subnet_of(_SLIRP_NETWORK) and net not in prefixes]
    prefixes += [subnet for subnet in connected_subnets() if subnet not in prefixes]
    prefixes += [f"{address}/32" for address in host_addresses() if address not in _SLIRP_OWN]
    return prefixes


def _route(prefix: str, sequence: int) -> bytes:
    network = ipaddress.IPv4Network(prefix)
    # struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags
    body = struct.pack("=BBBBBBBBI", socket.AF_INET, network.prefixlen, 0, 0, _RT_TABLE_MAIN,
                       _RTPROT_STATIC, _RT_SCOPE_UNIVERSE, _RTN_PROHIBIT, 0)
    body += struct.pack("=HH", 8, _RTA_DST) + network.network_address.packed
    flags = _NLM_F_REQUEST | _NLM_F_ACK | _NLM_F_CREATE | _NLM_F_EXCL
    return struct.pack("=IHHII", 16 + len(body), _RTM_NEWROUTE, flags, sequence, 0) + body


def _setns(fd: int, kind: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, kind) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


def main(argv: list[str]) -> int:
    """Enter the namespace at argv[0] (through the user namespace on descriptor argv[1], if
    given) and add a prohibit route for each prefix read from stdin; exit 0 when all are in."""
    if len(argv) > 1:
        _setns(int(argv[1]), _CLONE_NEWUSER)  # a user is no one in the sandbox's network otherwise
    net = os.open(argv[0], os.O_RDONLY | os.O_CLOEXEC)
    _setns(net, _CLONE_NEWNET)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as link:
        for sequence, prefix in enumerate(sys.stdin.read().split(), start=1):
            link.send(_route(prefix, sequence))
            reply = link.recv(4096)
            _length, kind, _flags, _seq, _pid = struct.unpack_from("=IHHII", reply)
            code = struct.unpack_from("=i", reply, 16)[0] if kind == _NLMSG_ERROR else 0
            if code != 0:
                print(f"route to {prefix}: {os.strerror(-code)}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OSError as exc:
        print(exc.strerror or str(exc), file=sys.stderr)
        sys.exit(1)
