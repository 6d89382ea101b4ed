"""web_extract — fetch a web page (size- and time-limited, public addresses only) and return its readable text."""

from __future__ import annotations

import asyncio

from companion.safety.network.netguard import Fetched, FetchError, fetch

SCHEMA = {
    "type": "function",
    "name": "web_extract",
    "description": (
        "Read a web page: fetch an http(s) URL and return its main readable text (articles, "
        "docs, plain text, JSON). Long pages are cut and say so."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The full address, starting with http:// or https://."},
        },
        "required": ["url"],
        "additionalProperties": False,
    },
}
TOOLSET = "web"
RISK = "read"

ANNOUNCE = "Let me read that page."
HEARTBEAT = ["The page is slow to load...", "Still waiting on that site..."]
COMPLETE = "Got the page."
FAIL = "I couldn't read that page."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}

MAX_BYTES = 1_000_000
"""At most this much of a page is downloaded."""
MAX_SECONDS = 20.0
MAX_CHARS = {"voice": 4_000, "text": 12_000}
"""How much readable text goes back to the model, by channel."""
_TEXT_TYPES = ("text/plain", "text/markdown", "text/csv", "application/json", "text/xml",
               "application/xml", "application/rss+xml", "application/atom+xml")
_HTML_TYPES = ("text/html", "application/xhtml+xml", "")


async def execute(args: dict, ctx) -> str:
    url = args.get("url") if isinstance(args, dict) else None
    if not isinstance(url, str) or not url.strip():
        return ctx.fail("I need the web address of the page to read.")
    settings = ctx.services.get("settings")
    allow_private = bool(settings is not None and settings.tools.web_allow_private)
    try:
        page = await fetch(url, allow_private=allow_private, max_bytes=MAX_BYTES,
                           timeout_s=min(MAX_SECONDS, ctx.budget_s))
    except FetchError as exc:
        return ctx.fail(str(exc))
    if page.status >= 400:
        return ctx.fail(f"The site answered with an error ({page.status}) for {page.url}.")
    text = await _readable_text(page)
    if text is None:
        return ctx.fail(f"That's a {page.content_type} file, which I can't read as text.")
    if not text.strip():
        return ctx.fail(f"I couldn't find any readable text on {page.url}.")
    limit = MAX_CHARS["voice" if str(ctx.channel) == "voice" else "text"]
    notes = []
    if page.truncated:
        notes.append(f"[the page is larger than {MAX_BYTES // 1000} KB; I read only the first part]")
    if len(text) > limit:
        notes.append(f"[showing the first {limit:,} of {len(text):,} characters]")
        text = text[:limit]
    return "\n".join([f"Source: {page.url}", "", text.strip(), *notes])


async def _readable_text(page: Fetched) -> str | None:
    if page.content_type in _HTML_TYPES:
        # trafilatura is CPU-bound; keep the event loop (and her face) responsive.
        return await asyncio.to_thread(_extract_html, page)
    if page.content_type in _TEXT_TYPES or page.content_type.startswith("text/"):
        return page.body.decode(page.charset or "utf-8", errors="replace")
    return None


def _extract_html(page: Fetched) -> str:
    import trafilatura

    text = trafilatura.extract(page.body, url=page.url, include_comments=False, include_tables=True,
                               favor_recall=True)
    if not text:
        # Pages with no main article (link lists, short notes): plain text of the whole page.
        text = trafilatura.html2txt(page.body)
    return text or ""
