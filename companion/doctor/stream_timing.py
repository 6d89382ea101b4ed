"""One streamed chat request, timed: when its first token came, how fast the rest were written,
and what the server itself counted (llama.cpp's `timings`, any server's `usage`, Ollama's
prompt_eval_count and durations)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from companion.brain.client import NO_KEY, chat_tools, resolve_api_key
from companion.brain.server import server_root
from companion.config import BrainSettings


@dataclass(frozen=True)
class Timing:
    first_token_s: float
    """From sending the request to its first written token (or the end, if it wrote none)."""
    tokens: int
    """Streamed pieces with text or a tool call in them (servers send about one token each)."""
    writing_s: float
    """From the first piece to the last."""
    server: dict[str, Any]
    """llama.cpp's `timings` (prompt_n, prompt_ms, predicted_n, predicted_per_second) when it
    sent them; Ollama's counts under the same names."""
    prompt_tokens: int = 0
    """The prompt's size as the server counted it (`usage`), 0 when it did not say."""


class StreamFailed(Exception):
    """The server answered with an error status or a stream that is not a chat reply."""


async def timed_request(settings: BrainSettings, messages: list[dict[str, Any]],
                        tools: list[dict[str, Any]] | None, *, max_tokens: int, timeout_s: float,
                        ollama: bool = False) -> Timing:
    """Send one streamed request and time it; raises httpx.HTTPError or StreamFailed.

    `ollama`: through Ollama's own /api/chat, the one of its APIs that reports its counts and
    durations (its OpenAI endpoint renders the same prompt into the same cache)."""
    body: dict[str, Any] = {"model": settings.model, "messages": messages, "stream": True}
    if ollama:
        url = server_root(settings.base_url) + "/api/chat"
        body["options"] = {"num_predict": max_tokens, "temperature": settings.temperature}
        read = _ollama_line
    else:
        url = settings.base_url.rstrip("/") + "/chat/completions"
        body.update(max_tokens=max_tokens, temperature=settings.temperature)
        read = _sse_line
    if tools:
        body["tools"] = chat_tools(tools)
    key = resolve_api_key(settings)
    headers = {"Authorization": f"Bearer {key}"} if key != NO_KEY else {}
    timeout = httpx.Timeout(timeout_s, connect=min(settings.connect_timeout_s, timeout_s))
    first = last = 0.0
    tokens, server, prompt_tokens, answered = 0, {}, 0, False
    async with httpx.AsyncClient(timeout=timeout, headers=headers) as client:
        started = time.monotonic()
        async with client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")
                raise StreamFailed(f"{response.status_code}: {_message(text)}")
            async for line in response.aiter_lines():
                chunk = read(line)
                if chunk is None:
                    break
                answered = answered or isinstance(chunk.get("choices"), list)
                server = chunk.get("timings") if isinstance(chunk.get("timings"), dict) else server
                usage = chunk.get("usage")
                if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
                    prompt_tokens = usage["prompt_tokens"]
                if _wrote(chunk):
                    last = time.monotonic()
                    first = first or last
                    tokens += 1
                    if tokens > max_tokens:
                        break  # a server that ignores max_tokens must not keep the doctor waiting
                if chunk.get("done"):
                    break
        ended = time.monotonic()
    if not answered:
        raise StreamFailed("the stream held no chat reply")
    return Timing((first or ended) - started, tokens, last - first, server, prompt_tokens)


def _sse_line(line: str) -> dict[str, Any] | None:
    """One server-sent event as a chunk ({} for other lines), None at [DONE]."""
    if not line.startswith("data:"):
        return {}
    data = line[5:].strip()
    return None if data == "[DONE]" else _object(data)


def _ollama_line(line: str) -> dict[str, Any] | None:
    """One line of Ollama's /api/chat stream, as an OpenAI-shaped chunk with llama.cpp's
    timing names; its last line (done) carries the counts, durations in nanoseconds."""
    data = _object(line)
    message = data.get("message")
    if not isinstance(message, dict):
        return {}
    delta = {"content": message.get("content") or "", "tool_calls": message.get("tool_calls")}
    chunk: dict[str, Any] = {"choices": [{"delta": delta}], "done": bool(data.get("done"))}
    if data.get("done"):
        prompt_n, prompt_ns = data.get("prompt_eval_count"), data.get("prompt_eval_duration")
        written, writing_ns = data.get("eval_count"), data.get("eval_duration")
        timings: dict[str, Any] = {}
        if isinstance(prompt_n, int) and isinstance(prompt_ns, int | float):
            timings.update(prompt_n=prompt_n, prompt_ms=prompt_ns / 1e6)
            chunk["usage"] = {"prompt_tokens": prompt_n}
        if isinstance(written, int) and isinstance(writing_ns, int | float) and writing_ns > 0:
            timings.update(predicted_n=written, predicted_per_second=written / (writing_ns / 1e9))
        chunk["timings"] = timings
    return chunk


def _wrote(chunk: dict[str, Any]) -> bool:
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    delta = choices[0].get("delta") or {}
    return bool(delta.get("content") or delta.get("tool_calls"))


def _object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _message(text: str) -> str:
    error = _object(text).get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return text.strip()[:200] or "no message"
