"""The chat model: any OpenAI-compatible Chat Completions endpoint, streamed, with tool calls."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai

from companion.brain.fill import FillLine
from companion.brain.server import ServerInfo, fix_for, guess_kind, probe_server
from companion.brain.tls import openai_tls
from companion.config import BrainSettings
from companion.errors import CompanionError, Stage

log = logging.getLogger(__name__)

API_KEY_VARIABLES = ("COMPANION_API_KEY", "OPENAI_API_KEY")
NO_KEY = "no-key"
"""Sent when no key is configured: a local Ollama ignores it, the client library needs one."""


@dataclass(frozen=True)
class ToolCallRequest:
    """One call the model asked for; `arguments` is the raw JSON text it wrote (maybe broken)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    """One model round: its raw text (reasoning and tags still in) and the calls it asked for."""

    text: str
    tool_calls: tuple[ToolCallRequest, ...] = field(default_factory=tuple)
    finish_reason: str = "stop"


class BrainError(CompanionError):
    """The model endpoint failed; `code` is one of unreachable, auth, unknown_model, wrong_url,
    no_tools, timeout, cut, dropped, context, rate_limit, garbled, status.

    `context_tokens` is the server's context size when it said (a context-exceeded error)."""

    stage = Stage.BRAIN
    context_tokens: int = 0


class ChatModel(Protocol):
    """What the turn loop needs from a brain (a test double is ten lines)."""

    model: str

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
        on_text: Callable[[str], bool | None], *, max_tokens: int | None = None,
    ) -> ModelReply: ...


def resolve_api_key(settings: BrainSettings) -> str:
    """The key from the settings, else COMPANION_API_KEY, else OPENAI_API_KEY, else none."""
    if settings.api_key:
        return settings.api_key
    for name in API_KEY_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    return NO_KEY


def chat_tools(schemas: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flat tool SCHEMAs ({"type", "name", "description", "parameters"}) in the chat `tools` shape."""
    tools = []
    for schema in schemas:
        function = {"name": schema["name"], "description": schema.get("description", "")}
        function["parameters"] = schema.get("parameters") or {"type": "object", "properties": {}}
        tools.append({"type": "function", "function": function})
    return tools


class OpenAIChatModel:
    """Streams one completion at a time through the official `openai` client (AsyncOpenAI)."""

    def __init__(self, settings: BrainSettings) -> None:
        self.settings = settings
        self.model = settings.model
        self.server = ServerInfo(guess_kind(settings.base_url))
        """What the server is; the URL's guess until `describe()` has asked it."""
        self._describing: asyncio.Future[ServerInfo] | None = None
        self.fills = FillLine()
        """Requests sent ahead to fill the server's prompt cache (brain/fill.py)."""
        timeout = openai.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s)
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=resolve_api_key(settings),
            max_retries=0,  # she says what went wrong instead of going quiet for a minute
            timeout=timeout,
            # The process's one TLS context (brain/tls.py): a client's own costs ~45 ms of processor.
            http_client=openai.DefaultAsyncHttpxClient(timeout=timeout, verify=openai_tls()),
        )

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
        on_text: Callable[[str], bool | None], *, max_tokens: int | None = None,
    ) -> ModelReply:
        """Stream one round; `on_text` gets each raw content piece as it arrives and may return
        True to stop the stream there (finish_reason "stopped").

        Every request carries a reply cap (`max_tokens`, the typed cap when not given) and the
        sampling settings. Raises BrainError with a sentence she can say; cancellation closes
        the stream. A fill still in flight is hung up on first (one slot: it must not go first).
        """
        await self.fills.real_request()
        self.fills.live += 1
        try:
            return await self._complete(messages, tools, on_text, max_tokens=max_tokens)
        finally:
            self.fills.live -= 1

    def fill(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> bool:
        """Send `messages` ahead, one token asked, so the server's prompt cache holds them when the
        real request comes (brain/fill.py); False when nothing was sent. The one token is read to
        the stream's end: broken off after it, the stream's generators were left to the garbage
        collector, which under Qt's loop closed them outside any task (a traceback per fill)."""
        key = repr((messages, tools))
        return self.fills.offer(key, lambda: self._complete(messages, tools, lambda _piece: None, max_tokens=1))

    async def _complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
        on_text: Callable[[str], bool | None], *, max_tokens: int | None = None,
    ) -> ModelReply:
        # Messages and tools travel in extra_body (which wins over the typed fields): the client's
        # typed transform walks every message and schema, measured at ~58 ms per request with 60
        # history messages, 80% of a turn's own overhead. The JSON sent is the same.
        body: dict[str, Any] = {
            "messages": list(messages),
            "max_tokens": max_tokens or self.settings.max_tokens_typed,
            "temperature": self.settings.temperature,
            "top_p": self.settings.top_p,
        }
        if tools:
            body["tools"] = chat_tools(tools)
        try:
            stream = await self._client.chat.completions.create(
                model=self.model, messages=[], stream=True, extra_body=body
            )
        except openai.OpenAIError as exc:
            raise self._error(exc, started=False) from exc
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish = "stop"
        answered = False
        """A chunk with choices arrived: the server speaks the protocol (a real reply, even an
        empty one, always has one)."""
        chunks = aiter(stream)
        try:
            while True:
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                except ValueError as exc:  # a stream event that is not JSON
                    raise self._garbled(stream, exc) from exc
                choices = getattr(chunk, "choices", None)
                if not isinstance(choices, list) or not choices:
                    continue
                answered = True
                choice = chunk.choices[0]
                delta = choice.delta
                if delta is not None and delta.content:
                    text.append(delta.content)
                    if on_text(delta.content):
                        finish = "stopped"  # closing the stream tells the server to stop generating
                        break
                for call in (delta.tool_calls if delta is not None else None) or []:
                    slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call.id or slot["id"]
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
                finish = choice.finish_reason or finish
        except openai.OpenAIError as exc:  # a socket cut mid-stream too (APIConnectionError)
            raise self._error(exc, started=True) from exc
        finally:
            await stream.close()
        if not answered:
            raise self._garbled(stream, None)
        requests = tuple(
            ToolCallRequest(id=c["id"] or f"call_{i}", name=c["name"], arguments=c["arguments"])
            for i, c in sorted(calls.items())
        )
        return ModelReply("".join(text), requests, finish)

    async def describe(self) -> ServerInfo:
        """Ask the server what it is and how large its context is (once; never raises)."""
        if self._describing is None:
            key = resolve_api_key(self.settings)
            self._describing = asyncio.ensure_future(probe_server(
                self.settings.base_url, self.model, api_key="" if key == NO_KEY else key))
        # Shielded: a turn cancelled while waiting must not cancel the probe others share.
        self.server = await asyncio.shield(self._describing)
        return self.server

    async def list_models(self) -> list[str]:
        """The model names the endpoint serves (for the doctor and the Settings dialog)."""
        try:
            page = await self._client.models.list()
        except openai.OpenAIError as exc:
            raise self._error(exc, started=False) from exc
        return [m.id for m in page.data]

    async def close(self) -> None:
        if self._describing is not None and not self._describing.done():
            self._describing.cancel()
        await self._client.close()

    def _garbled(self, stream: Any, exc: Exception | None) -> BrainError:
        """HTTP 200 but no chat reply: a web page, other JSON, or a stream of something else."""
        response = getattr(stream, "response", None)
        kind = (response.headers.get("content-type", "") if response is not None else "").lower()
        if "html" in kind:
            what = "a web page"
        elif exc is not None or "event-stream" in kind:
            what = "a stream I can't read"
        else:
            what = f"something else ({kind.split(';')[0] or 'no content type'})"
        log.warning("brain at %s answered garbage (%s)", self.settings.base_url, kind, exc_info=exc)
        return BrainError("garbled", f"My brain at {self.settings.base_url} answered with {what}, not a "
                                     "chat reply. Check in Settings → Brain that the address is an "
                                     "OpenAI-compatible server (it usually ends in /v1).")

    def _error(self, exc: Exception, *, started: bool) -> BrainError:
        url, model, kind = self.settings.base_url, self.model, self.server.kind
        where = f"{self.server.name} at {url}"
        log.info("brain request failed: %r", exc)
        if isinstance(exc, openai.APITimeoutError):
            return BrainError(
                "timeout",
                f"My brain ({where}) took longer than {self.settings.read_timeout_s:g} seconds to "
                "answer. It may still be loading the model; try again in a moment.",
            )
        if started and isinstance(exc, openai.APIConnectionError):
            return BrainError("cut", "My brain's connection dropped in the middle of my answer. "
                                     "Please ask me again.")
        if started and not isinstance(exc, openai.APIStatusError):
            # HTTP 200, then an `error` event inside the stream (llama.cpp: "got exception: …").
            return BrainError("dropped", "Sorry, my connection dropped. Ask me again.")
        if isinstance(exc, openai.APIConnectionError):
            return BrainError("unreachable", f"I can't reach my brain at {url}. "
                                             + fix_for(kind, "unreachable", model))
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return BrainError("auth", f"My brain at {url} refused my API key. Check the key in Settings "
                                      "or the COMPANION_API_KEY environment variable.")
        message = _message(exc)
        if isinstance(exc, openai.NotFoundError):
            if "model" in message.lower():
                return BrainError("unknown_model", f"My brain doesn't have the model {model}. "
                                                   + fix_for(kind, "unknown_model", model))
            return BrainError("wrong_url", f"Nothing at {url} answers chat requests. "
                                           + fix_for(kind, "wrong_url", model))
        if isinstance(exc, openai.APIStatusError) and _says_context_exceeded(exc, message):
            error = BrainError("context", "That was more than my brain can hold in mind at once "
                                          f"({where}). " + fix_for(kind, "context", model))
            error.context_tokens = _context_size(exc, message)
            return error
        if isinstance(exc, openai.APIStatusError) and _says_no_tools(message):
            return BrainError("no_tools", f"The model {model} can't use tools, so I'll answer without them. "
                                          + fix_for(kind, "no_tools", model))
        if isinstance(exc, openai.RateLimitError):
            return BrainError("rate_limit", "My brain says I'm sending too many requests. "
                                            "Wait a moment and try again.")
        status = getattr(exc, "status_code", None)
        return BrainError("status", f"My brain ({where}) had a problem ({status or 'error'}: {message}).")


def _says_context_exceeded(exc: Exception, message: str) -> bool:
    """llama.cpp: type exceed_context_size_error; vLLM and OpenAI: "maximum context length";
    others: "context length" / "context window"."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(inner, dict) and "context" in str(inner.get("type") or inner.get("code") or ""):
        return True
    text = message.lower()
    return any(hint in text for hint in ("context size", "context length", "context window",
                                         "maximum context"))


def _context_size(exc: Exception, message: str) -> int:
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(inner, dict) and isinstance(inner.get("n_ctx"), int):
        return inner["n_ctx"]
    match = re.search(r"context (?:size|length) (?:is |of )?\(?(\d+)", message)
    return int(match.group(1)) if match else 0


def _says_no_tools(message: str) -> bool:
    """Servers word it differently: Ollama "does not support tools", llama.cpp "tools param
    requires --jinja", vLLM "tool choice requires --enable-auto-tool-choice"."""
    text = message.lower()
    return "tool" in text and any(hint in text for hint in ("support", "jinja", "tool choice", "tool_choice"))


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(body.get("message"), str):
            return body["message"]
    return getattr(exc, "message", None) or str(exc)
