"""The chat model: any OpenAI-compatible Chat Completions endpoint, streamed, with tool calls."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import openai

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
    no_tools, timeout, cut, rate_limit, status."""

    stage = Stage.BRAIN


class ChatModel(Protocol):
    """What the turn loop needs from a brain (a test double is ten lines)."""

    model: str

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
        on_text: Callable[[str], None],
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
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=resolve_api_key(settings),
            max_retries=0,  # she says what went wrong instead of going quiet for a minute
            timeout=httpx.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s),
        )

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
        on_text: Callable[[str], None],
    ) -> ModelReply:
        """Stream one round; `on_text` gets each raw content piece as it arrives.

        Raises BrainError with a sentence she can say; cancellation closes the stream.
        """
        # Messages and tools travel in extra_body (which wins over the typed fields): the client's
        # typed transform walks every message and schema, measured at ~58 ms per request with 60
        # history messages, 80% of a turn's own overhead. The JSON sent is the same.
        body: dict[str, Any] = {"messages": list(messages)}
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
        try:
            async for chunk in stream:
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta
                if delta is not None and delta.content:
                    text.append(delta.content)
                    on_text(delta.content)
                for call in (delta.tool_calls if delta is not None else None) or []:
                    slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call.id or slot["id"]
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
                finish = choice.finish_reason or finish
        except openai.OpenAIError as exc:
            raise self._error(exc, started=True) from exc
        except httpx.HTTPError as exc:
            raise self._error(exc, started=True) from exc
        finally:
            await stream.close()
        requests = tuple(
            ToolCallRequest(id=c["id"] or f"call_{i}", name=c["name"], arguments=c["arguments"])
            for i, c in sorted(calls.items())
        )
        return ModelReply("".join(text), requests, finish)

    async def list_models(self) -> list[str]:
        """The model names the endpoint serves (for the doctor and the Settings dialog)."""
        try:
            page = await self._client.models.list()
        except openai.OpenAIError as exc:
            raise self._error(exc, started=False) from exc
        return [m.id for m in page.data]

    async def close(self) -> None:
        await self._client.close()

    def _error(self, exc: Exception, *, started: bool) -> BrainError:
        url, model = self.settings.base_url, self.model
        log.info("brain request failed: %r", exc)
        if isinstance(exc, openai.APITimeoutError):
            return BrainError(
                "timeout",
                f"My brain at {url} took longer than {self.settings.read_timeout_s:g} seconds to answer. "
                "It may still be loading the model; try again in a moment.",
            )
        if started and isinstance(exc, openai.APIConnectionError | httpx.HTTPError):
            return BrainError("cut", "My brain's connection dropped in the middle of my answer. "
                                     "Please ask me again.")
        if isinstance(exc, openai.APIConnectionError):
            return BrainError("unreachable", f"I can't reach my brain at {url} — is Ollama running?")
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return BrainError("auth", f"My brain at {url} refused my API key. Check the key in Settings "
                                      "or the COMPANION_API_KEY environment variable.")
        message = _message(exc)
        if isinstance(exc, openai.NotFoundError):
            if "model" in message.lower():
                return BrainError("unknown_model", f"My brain doesn't have the model {model}. Pull it with "
                                                   f"'ollama pull {model}', or pick another model in Settings.")
            return BrainError("wrong_url", f"Nothing at {url} answers chat requests. Check the brain "
                                           "address; for Ollama it ends in /v1.")
        if isinstance(exc, openai.APIStatusError) and _says_no_tools(message):
            return BrainError("no_tools", f"The model {model} can't use tools, so I'll answer without them. "
                                          "For tools, pick a tool-capable model such as qwen2.5:3b.")
        if isinstance(exc, openai.RateLimitError):
            return BrainError("rate_limit", "My brain says I'm sending too many requests. "
                                            "Wait a moment and try again.")
        status = getattr(exc, "status_code", None)
        return BrainError("status", f"My brain at {url} had a problem ({status or 'error'}: {message}).")


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
