"""web_search against a local fake SearXNG over real HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from companion.config import Settings, ToolSettings
from companion.tools.builtin import web_search
from companion.tools.context import ToolContext

RESULTS = [
    {"title": f"Otter fact {i}", "url": f"https://otters.example/{i}", "content": f"Otters are great, fact {i}."}
    for i in range(1, 9)
]


class FakeSearx:
    """Answers GET /search?q=…&format=json like SearXNG; records each query."""

    def __init__(self, status: int = 200, payload: object | None = None) -> None:
        self.queries: list[dict[str, list[str]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != "/search":
                    self.send_error(404)
                    return
                fake.queries.append(parse_qs(parts.query))
                body = json.dumps(payload if payload is not None else
                                  {"query": "x", "results": RESULTS, "answers": ["Otters hold hands."]}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def searx() -> Iterator[FakeSearx]:
    fake = FakeSearx()
    yield fake
    fake.close()


def ctx_for(tmp_path, search_url: str) -> ToolContext:
    settings = replace(Settings(), tools=ToolSettings(search_url=search_url))
    return ToolContext(workspace=tmp_path, data_dir=tmp_path, services={"settings": settings})


async def test_results_come_back_numbered_with_address_and_snippet(tmp_path, searx: FakeSearx) -> None:
    ctx = ctx_for(tmp_path, searx.base)
    text = await web_search.execute({"query": "otters  ", "count": 3}, ctx)
    assert not ctx.failed
    assert searx.queries == [{"q": ["otters"], "format": ["json"], "safesearch": ["1"]}]
    assert "Answer: Otters hold hands." in text
    assert "1. Otter fact 1\n   https://otters.example/1\n   Otters are great, fact 1." in text
    assert "3. Otter fact 3" in text and "4. Otter fact 4" not in text
    assert "Top 3 of 8 results" in text


async def test_a_base_address_ending_in_search_works_too(tmp_path, searx: FakeSearx) -> None:
    ctx = ctx_for(tmp_path, searx.base + "/search/")
    assert "Otter fact 1" in await web_search.execute({"query": "otters"}, ctx)


def test_check_is_false_until_a_search_url_is_configured() -> None:
    try:
        web_search.configure("")
        assert web_search.check() is False
        web_search.configure("http://127.0.0.1:8888")
        assert web_search.check() is True
    finally:
        web_search.configure("")


async def test_a_service_without_json_enabled_gets_a_fixing_sentence(tmp_path) -> None:
    fake = FakeSearx(status=403, payload={"error": "forbidden"})
    try:
        ctx = ctx_for(tmp_path, fake.base)
        text = await web_search.execute({"query": "otters"}, ctx)
        assert ctx.failed and "json" in text and "settings.yml" in text
    finally:
        fake.close()


async def test_no_results_is_said_plainly(tmp_path) -> None:
    fake = FakeSearx(payload={"results": []})
    try:
        ctx = ctx_for(tmp_path, fake.base)
        assert await web_search.execute({"query": "zzxq"}, ctx) == "No results for 'zzxq'."
    finally:
        fake.close()


async def test_an_unreachable_service_is_a_sentence_not_a_crash(tmp_path, unused_port: int) -> None:
    ctx = ctx_for(tmp_path, f"http://127.0.0.1:{unused_port}")
    text = await web_search.execute({"query": "otters"}, ctx)
    assert ctx.failed and "couldn't reach the search service" in text


async def test_without_a_configured_service_it_says_how_to_set_one_up(tmp_path) -> None:
    ctx = ctx_for(tmp_path, "")
    text = await web_search.execute({"query": "otters"}, ctx)
    assert ctx.failed and "Settings" in text


def test_web_search_is_not_offered_to_the_model_until_configured() -> None:
    from companion.tools.registry import Registry

    now = [0.0]
    registry = Registry(clock=lambda: now[0])
    registry.register_modules([web_search])
    try:
        web_search.configure("")
        assert [s.name for s in registry.offered("companion")] == []
        web_search.configure("http://127.0.0.1:8888")
        now[0] += 31  # past the 30 s check() cache
        assert [s.name for s in registry.offered("companion")] == ["web_search"]
    finally:
        web_search.configure("")


async def test_the_companion_configures_search_from_its_settings(tmp_path, searx: FakeSearx) -> None:
    from brain_harness import make_config

    from companion.runtime import Companion

    config = make_config(tmp_path, "http://127.0.0.1:9/v1", tools={"search_url": searx.base})
    companion = Companion(config)
    await companion.start()
    try:
        assert web_search.check() is True
        companion.apply_settings(replace(companion.settings, tools=replace(companion.settings.tools, search_url="")))
        assert web_search.check() is False
    finally:
        await companion.close()
        web_search.configure("")
