"""web_extract against real local HTTP servers: limits, readable text, and the private-address guard."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from companion.config import Settings, ToolSettings
from companion.safety.network import netguard
from companion.safety.network.netguard import BlockedAddress, fetch, is_public_address
from companion.tools.builtin import web_extract
from companion.tools.context import ToolContext

ARTICLE = (
    "<html><head><title>Otters</title></head><body><nav>Home | About | Shop</nav>"
    "<article><h1>Sea otters hold hands</h1>"
    + "<p>Sea otters hold hands while they sleep so they do not drift apart. " * 3 + "</p>"
    + "<p>They also keep a favourite rock in a pouch under their arm for cracking shells.</p>"
    "</article><footer>Copyright nobody</footer></body></html>"
)


class Site:
    """A tiny threaded HTTP server on a loopback address, counting the requests it serves."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.hits: list[str] = []
        self.release = threading.Event()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                site.hits.append(self.path)
                route = self.path.split("?")[0]
                if route == "/article":
                    self._send(200, "text/html; charset=utf-8", ARTICLE.encode())
                elif route == "/plain":
                    self._send(200, "text/plain", b"just some words\n")
                elif route == "/huge":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.end_headers()
                    line = b"all work and no play makes a very long page\n" * 1000
                    try:
                        for _ in range(200):  # ~8.8 MB unless the client hangs up first
                            self.wfile.write(line)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                elif route == "/slow":
                    site.release.wait(30)
                    self._send(200, "text/plain", b"finally")
                elif route == "/image":
                    self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
                elif route == "/missing":
                    self._send(404, "text/plain", b"not here")
                elif route == "/redirect":
                    target = self.path.split("to=", 1)[1]
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.host = host
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.close()


def ctx_for(tmp_path, *, allow_private: bool, budget_s: float = 20.0) -> ToolContext:
    settings = replace(Settings(), tools=ToolSettings(web_allow_private=allow_private))
    return ToolContext(workspace=tmp_path, data_dir=tmp_path, budget_s=budget_s,
                       services={"settings": settings})


async def test_an_article_comes_back_as_its_readable_text(tmp_path, site: Site) -> None:
    ctx = ctx_for(tmp_path, allow_private=True)
    text = await web_extract.execute({"url": site.url("/article")}, ctx)
    assert not ctx.failed, text
    assert "Sea otters hold hands" in text and "favourite rock" in text
    assert "Home | About | Shop" not in text and "Copyright nobody" not in text


async def test_a_loopback_address_is_refused_without_the_setting_and_never_contacted(tmp_path, site: Site) -> None:
    ctx = ctx_for(tmp_path, allow_private=False)
    text = await web_extract.execute({"url": site.url("/article")}, ctx)
    assert ctx.failed and "private" in text and "web_allow_private" in text
    assert site.hits == []


async def test_a_redirect_to_a_loopback_address_is_refused_when_not_allowed(tmp_path) -> None:
    # The first site counts as public only for this test (exempt); the redirect target is real
    # loopback and is checked by the real rule: it must never see a request.
    public, private = Site("127.0.0.2"), Site("127.0.0.1")
    try:
        start = public.url("/redirect?to=" + private.url("/article"))
        with pytest.raises(BlockedAddress):
            await fetch(start, allow_private=False, max_bytes=100_000, timeout_s=10, exempt={"127.0.0.2"})
        assert public.hits and private.hits == []
        # Allowed by the setting, the same chain is followed to the page.
        page = await fetch(start, allow_private=True, max_bytes=100_000, timeout_s=10)
        assert page.url == private.url("/article") and b"Sea otters" in page.body
    finally:
        public.close()
        private.close()


async def test_a_huge_page_is_cut_at_the_size_limit_and_says_so(tmp_path, site: Site,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_extract, "MAX_BYTES", 200_000)
    ctx = ctx_for(tmp_path, allow_private=True)
    text = await web_extract.execute({"url": site.url("/huge")}, ctx)
    assert not ctx.failed
    assert "I read only the first part" in text
    assert "showing the first 12,000 of 200,000 characters" in text


async def test_a_slow_page_is_given_up_at_the_time_limit(tmp_path, site: Site) -> None:
    ctx = ctx_for(tmp_path, allow_private=True, budget_s=0.5)
    text = await web_extract.execute({"url": site.url("/slow")}, ctx)
    assert ctx.failed and "took longer than 0.5 seconds" in text


@pytest.mark.parametrize(("path", "expected"), [
    ("/plain", "just some words"),
    ("/image", "image/png file, which I can't read"),
    ("/missing", "error (404)"),
])
async def test_other_pages_get_a_clear_answer(tmp_path, site: Site, path: str, expected: str) -> None:
    ctx = ctx_for(tmp_path, allow_private=True)
    assert expected in await web_extract.execute({"url": site.url(path)}, ctx)


@pytest.mark.parametrize("url", ["ftp://example.com/x", "file:///etc/passwd", "not a url", ""])
async def test_addresses_that_are_not_web_pages_are_refused(tmp_path, url: str) -> None:
    ctx = ctx_for(tmp_path, allow_private=True)
    text = await web_extract.execute({"url": url}, ctx)
    assert ctx.failed and text


async def test_a_host_that_resolves_to_a_private_address_is_refused(tmp_path) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.0.0.5"]  # one public, one private answer

    with pytest.raises(BlockedAddress):
        await fetch("http://mixed.example/", allow_private=False, max_bytes=10, timeout_s=5, resolver=resolver)


@pytest.mark.parametrize(("address", "public"), [
    ("127.0.0.1", False), ("10.1.2.3", False), ("192.168.1.1", False), ("172.16.0.1", False),
    ("169.254.169.254", False), ("100.64.0.1", False), ("0.0.0.0", False), ("::1", False),
    ("fe80::1", False), ("fd00::1", False), ("::ffff:127.0.0.1", False), ("224.0.0.1", False),
    ("93.184.216.34", True), ("2606:4700:4700::1111", True), ("1.1.1.1", True),
])
def test_which_addresses_count_as_public(address: str, public: bool) -> None:
    assert is_public_address(address) is public


async def test_a_name_is_resolved_before_the_check_so_localhost_is_refused(tmp_path, site: Site) -> None:
    ctx = ctx_for(tmp_path, allow_private=False)
    port = site.server.server_address[1]
    text = await web_extract.execute({"url": f"http://localhost:{port}/article"}, ctx)
    assert ctx.failed and "private" in text and site.hits == []
    assert await netguard.system_resolver("localhost", port)
