"""Fetching a web page without being turned against the user's own network.

Every hop (the first URL and each redirect, followed by hand) is resolved, and refused when
any address it resolves to is not a public one (loopback, private, link-local, …) unless
private addresses are allowed. The connection then goes to the address that was checked, so
a second DNS answer cannot swap in a private one (TLS still verifies the real host name).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import httpx

__all__ = ["BlockedAddress", "FetchError", "Fetched", "fetch", "is_public_address"]

REDIRECTS = {301, 302, 303, 307, 308}
MAX_REDIRECTS = 5
USER_AGENT = "companion/0.1 (+https://github.com/; a personal desktop assistant)"

Resolver = Callable[[str, int], Awaitable[list[str]]]


class FetchError(Exception):
    """A fetch that did not work; the message is a sentence for the user."""


class BlockedAddress(FetchError):
    """The URL (or a redirect) points at a loopback, private or otherwise non-public address."""


@dataclass(frozen=True)
class Fetched:
    url: str
    """The final URL, after redirects."""
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool
    """The body was longer than max_bytes and was cut."""


def is_public_address(address: str) -> bool:
    """True only for an address on the public internet. An IPv6 address that carries an IPv4
    one (mapped, compatible, translated, NAT64, 6to4, Teredo) is judged by that IPv4 address
    too: `::ffff:0:7f00:1`, `64:ff9b::7f00:1` and `2002:7f00:1::` all reach 127.0.0.1. The
    local-use NAT64 prefix is never public: its network picks where the IPv4 sits."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if not ip.is_global or ip.is_multicast or ip in _LOCAL_NAT64:
        return False
    return all(inner.is_global and not inner.is_multicast for inner in _embedded_ipv4(ip))


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# RFC 8215's local-use prefix: the network puts the IPv4 address at bit 48, 56, 64 or 96 (RFC
# 6052) and no address says which, so 64:ff9b:1:7f00:0:100:808:808 is 127.0.0.1 to one
# translator and 8.8.8.8 to another. IANA lists it as not globally reachable (CPython 3.11.10
# and later say so too; this one doesn't).
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT "IPv4-translated"
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated "IPv4-compatible"


def _embedded_ipv4(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (none for an IPv4 address or a plain IPv6 one)."""
    if isinstance(ip, ipaddress.IPv4Address):
        return []
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    found = [x for x in (ip.ipv4_mapped, ip.sixtofour) if x is not None]
    if ip.teredo is not None:
        found += list(ip.teredo)  # (server, client)
    if ip in _TRANSLATED or ip in _COMPATIBLE or ip in _NAT64:
        found.append(low32)
    return found


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


async def fetch(
    url: str,
    *,
    allow_private: bool,
    max_bytes: int,
    timeout_s: float,
    resolver: Resolver = system_resolver,
    exempt: Iterable[str] = (),
) -> Fetched:
    """GET `url` within `timeout_s`, reading at most `max_bytes`; raises FetchError with a sentence.

    `exempt` lists addresses treated as public (for tests that need a first hop on loopback).
    """
    exempt = frozenset(exempt)
    try:
        async with asyncio.timeout(timeout_s), httpx.AsyncClient(
            follow_redirects=False, timeout=timeout_s, headers={"User-Agent": USER_AGENT},
        ) as client:
            current = _parse(url)
            for _ in range(MAX_REDIRECTS + 1):
                address = await _checked_address(current, allow_private, resolver, exempt)
                request = _pinned_request(client, current, address)
                response = await client.send(request, stream=True)
                try:
                    if response.status_code in REDIRECTS and "location" in response.headers:
                        current = _parse(str(current.join(response.headers["location"])))
                        continue
                    body, truncated = await _read_capped(response, max_bytes)
                    content_type, charset = _content_type(response.headers.get("content-type", ""))
                    return Fetched(str(current), response.status_code, content_type, charset, body, truncated)
                finally:
                    await response.aclose()
            raise FetchError(f"That page redirected more than {MAX_REDIRECTS} times, so I gave up.")
    except TimeoutError as exc:
        raise FetchError(f"The page took longer than {timeout_s:g} seconds, so I stopped waiting.") from exc
    except httpx.HTTPError as exc:
        raise FetchError(f"I couldn't reach that page ({_short(exc)}).") from exc


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise FetchError("That doesn't look like a web address.") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise FetchError("I can only read http:// and https:// web addresses.")
    return parsed


async def _checked_address(url: httpx.URL, allow_private: bool, resolver: Resolver,
                           exempt: frozenset[str]) -> str:
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        addresses = await resolver(url.host, port)
    except (OSError, UnicodeError) as exc:
        raise FetchError(f"I couldn't find the site {url.host}.") from exc
    if not addresses:
        raise FetchError(f"I couldn't find the site {url.host}.")
    if not allow_private:
        for address in addresses:
            if address not in exempt and not is_public_address(address):
                raise BlockedAddress(
                    f"{url.host} points into a private network ({address}), and I'm not allowed "
                    "to read private or local addresses. The setting tools.web_allow_private allows it."
                )
    return addresses[0]


def _pinned_request(client: httpx.AsyncClient, url: httpx.URL, address: str) -> httpx.Request:
    host_header = url.host if url.port is None else f"{url.host}:{url.port}"
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    return client.build_request("GET", url.copy_with(host=address), headers={"Host": host_header},
                                extensions=extensions)


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    body = bytearray()
    async for chunk in response.aiter_bytes():  # decoded, so a compressed bomb is capped too
        body.extend(chunk)
        if len(body) > max_bytes:
            return bytes(body[:max_bytes]), True
    return bytes(body), False


def _content_type(header: str) -> tuple[str, str | None]:
    parts = [p.strip() for p in header.split(";")]
    charset = next((p.split("=", 1)[1].strip("\"' ") for p in parts[1:] if p.lower().startswith("charset=")), None)
    return parts[0].lower(), charset


def _short(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."
