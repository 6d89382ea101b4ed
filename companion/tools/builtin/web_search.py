"""web_search — search the web through a SearXNG-compatible JSON endpoint (settings: tools.search_url)."""

from __future__ import annotations

import httpx

SCHEMA = {
    "type": "function",
    "name": "web_search",
    "description": (
        "Search the web and get the top results (title, address, snippet). Use web_extract "
        "afterwards to read a result in full."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "count": {"type": "integer", "description": "How many results (1-10, default 5).",
                      "minimum": 1, "maximum": 10},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}
TOOLSET = "web"
RISK = "read"

ANNOUNCE = "Let me look that up."
HEARTBEAT = ["The search is taking a moment...", "Still searching..."]
COMPLETE = "Here's what I found."
FAIL = "The search didn't work."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}

MAX_SECONDS = 10.0
MAX_SNIPPET_CHARS = 300

_configured = {"url": ""}
"""The search endpoint as last configured by the runtime (check() takes no arguments)."""


def configure(search_url: str) -> None:
    """Called by the runtime when settings load or change: an empty URL switches search off."""
    _configured["url"] = search_url.strip()


def check() -> bool:
    return bool(_configured["url"])


def search_endpoint(base: str) -> str:
    """The /search URL for a SearXNG base address (either form is accepted in settings)."""
    base = base.strip().rstrip("/")
    return base if base.endswith("/search") else base + "/search"


async def execute(args: dict, ctx) -> str:
    query = args.get("query") if isinstance(args, dict) else None
    if not isinstance(query, str) or not query.strip():
        return ctx.fail("I need something to search for.")
    count = args.get("count", 5)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 10:
        return ctx.fail("count must be a whole number from 1 to 10.")
    settings = ctx.services.get("settings")
    base = settings.tools.search_url if settings is not None else _configured["url"]
    if not base:
        return ctx.fail("Web search isn't set up: add a SearXNG address in Settings (tools.search_url).")
    params = {"q": query.strip(), "format": "json", "safesearch": "1"}
    try:
        async with httpx.AsyncClient(timeout=min(MAX_SECONDS, ctx.budget_s)) as client:
            response = await client.get(search_endpoint(base), params=params,
                                        headers={"Accept": "application/json"})
    except httpx.TimeoutException:
        return ctx.fail("The search service took too long to answer.")
    except httpx.HTTPError as exc:
        return ctx.fail(f"I couldn't reach the search service at {base} ({type(exc).__name__}).")
    if response.status_code == 403:
        return ctx.fail("The search service refused to answer in JSON; in SearXNG, add json to "
                        "search.formats in settings.yml.")
    if response.status_code >= 400:
        return ctx.fail(f"The search service answered with an error ({response.status_code}).")
    try:
        data = response.json()
        results = data.get("results") or []
        answers = [a if isinstance(a, str) else a.get("answer", "") for a in data.get("answers") or []]
    except (ValueError, AttributeError):
        return ctx.fail("The search service sent something that isn't search results.")
    lines = [f"Answer: {a}" for a in answers if a][:2]
    for i, item in enumerate([r for r in results if isinstance(r, dict) and r.get("url")][:count], 1):
        snippet = " ".join(str(item.get("content") or "").split())
        if len(snippet) > MAX_SNIPPET_CHARS:
            snippet = snippet[:MAX_SNIPPET_CHARS].rstrip() + "…"
        lines.append(f"{i}. {item.get('title') or item['url']}\n   {item['url']}" + (f"\n   {snippet}" if snippet else ""))
    if not lines:
        return f"No results for {query.strip()!r}."
    shown = min(count, len(results))
    header = f"Top {shown} of {len(results)} results for {query.strip()!r}:" if results else ""
    return "\n".join([header, *lines]).strip()
