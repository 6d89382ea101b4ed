"""What kind of server the brain is (Ollama, llama.cpp, a hosted API), its context size, and
the fix to suggest for each kind when something goes wrong."""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import httpx

from companion.brain.tls import httpx_tls

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 3.0
"""How long asking a server about itself may take (it is small and local, or it is skipped)."""
OLLAMA_DEFAULT_CONTEXT = 4096
"""Ollama's num_ctx when neither the model's parameters nor the server set one."""


class ServerKind(StrEnum):
    OLLAMA = "ollama"
    LLAMA_CPP = "llama.cpp"
    LOCAL = "local"
    """Some other OpenAI-compatible server on this machine or network (vLLM, LM Studio, …)."""
    HOSTED = "hosted"


@dataclass(frozen=True)
class ServerInfo:
    """What the server told about itself; `context_tokens` 0 and `tools` None mean unknown."""

    kind: ServerKind
    context_tokens: int = 0
    tools: bool | None = None
    """Whether the model's chat template takes tools (llama.cpp) or it lists the capability (Ollama)."""

    @property
    def name(self) -> str:
        return {
            ServerKind.OLLAMA: "Ollama", ServerKind.LLAMA_CPP: "llama.cpp's server",
            ServerKind.LOCAL: "the local model server", ServerKind.HOSTED: "the hosted API",
        }[self.kind]


def guess_kind(base_url: str) -> ServerKind:
    """The kind a URL suggests, before (or without) asking the server."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if parts.port == 11434 or "ollama" in host:
        return ServerKind.OLLAMA
    if _is_local(host):
        return ServerKind.LLAMA_CPP if parts.port == 8080 else ServerKind.LOCAL
    return ServerKind.HOSTED


def _is_local(host: str) -> bool:
    if host in ("localhost", "") or host.endswith((".local", ".lan", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def server_root(base_url: str) -> str:
    """The server's own address: the OpenAI-compatible path (/v1) taken off."""
    url = base_url.rstrip("/")
    return re.sub(r"/v1$", "", url)


async def probe_server(base_url: str, model: str, *, api_key: str = "",
                       timeout_s: float = PROBE_TIMEOUT_S) -> ServerInfo:
    """Ask the server what it is: llama.cpp answers GET /props, Ollama POST /api/show.

    Never raises: an unreachable or silent server gives the kind its URL suggests."""
    guessed = guess_kind(base_url)
    if guessed == ServerKind.HOSTED:
        return ServerInfo(guessed)  # hosted APIs publish neither; don't send them stray requests
    root = server_root(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx.AsyncClient(timeout=timeout_s, headers=headers, verify=httpx_tls()) as client:
            info = await _llama_cpp(client, root)
            if info is None:
                info = await _ollama(client, root, model)
    except (httpx.HTTPError, ValueError) as exc:
        log.debug("server probe at %s failed: %r", root, exc)
        info = None
    return info or ServerInfo(guessed)


async def _llama_cpp(client: httpx.AsyncClient, root: str) -> ServerInfo | None:
    response = await client.get(f"{root}/props")
    if response.status_code != 200:
        return None
    props = _object(response)
    settings = props.get("default_generation_settings")
    if not isinstance(settings, dict) or "n_ctx" not in settings:
        return None
    caps = props.get("chat_template_caps")
    tools = caps.get("supports_tools") if isinstance(caps, dict) else None
    return ServerInfo(ServerKind.LLAMA_CPP, _int(settings.get("n_ctx")),
                      tools if isinstance(tools, bool) else None)


async def _ollama(client: httpx.AsyncClient, root: str, model: str) -> ServerInfo | None:
    response = await client.post(f"{root}/api/show", json={"model": model})
    if response.status_code == 404 and "not found" in response.text.lower():
        return ServerInfo(ServerKind.OLLAMA, OLLAMA_DEFAULT_CONTEXT)  # Ollama, without that model
    if response.status_code != 200:
        return None
    show = _object(response)
    if "model_info" not in show and "parameters" not in show:
        return None
    # The runtime context is num_ctx when the model sets one; the model's own length is only a
    # ceiling (Ollama serves the OpenAI endpoint with its default context otherwise).
    parameters = str(show.get("parameters") or "")
    match = re.search(r"^\s*num_ctx\s+(\d+)", parameters, re.M)
    trained = next((_int(v) for k, v in (show.get("model_info") or {}).items()
                    if k.endswith(".context_length")), 0)
    context = _int(match.group(1)) if match else min(trained or OLLAMA_DEFAULT_CONTEXT, OLLAMA_DEFAULT_CONTEXT)
    capabilities = show.get("capabilities")
    tools = "tools" in capabilities if isinstance(capabilities, list) else None
    return ServerInfo(ServerKind.OLLAMA, context, tools)


def _object(response: httpx.Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def fix_for(kind: ServerKind, problem: str, model: str) -> str:
    """One sentence saying what the user can do about `problem`, for this kind of server.

    `problem` is one of unreachable, unknown_model, no_tools, wrong_url, context."""
    fixes: dict[ServerKind, dict[str, str]] = {
        ServerKind.OLLAMA: {
            "unreachable": "Is Ollama running? Start it with 'ollama serve'.",
            "unknown_model": f"Pull it with 'ollama pull {model}', or pick another model in Settings.",
            "no_tools": "For tools, pick a tool-capable model such as qwen2.5:3b or llama3.2:3b.",
            "wrong_url": "For Ollama the address ends in /v1, like http://127.0.0.1:11434/v1.",
            "context": "Give the model a larger num_ctx, or set OLLAMA_CONTEXT_LENGTH.",
        },
        ServerKind.LLAMA_CPP: {
            "unreachable": "Is llama-server running? Start it with your model, e.g. "
                           "'llama-server -m model.gguf --jinja'.",
            "unknown_model": "llama-server serves the model it was started with; "
                             "set that name in Settings or restart it with the one you want.",
            "no_tools": "Start llama-server with --jinja and a model whose chat template supports tools.",
            "wrong_url": "For llama-server the address ends in /v1, like http://127.0.0.1:8080/v1.",
            "context": "Restart llama-server with a larger context, e.g. -c 8192.",
        },
        ServerKind.LOCAL: {
            "unreachable": "Is the model server running at that address?",
            "unknown_model": "Pick a model that server serves in Settings.",
            "no_tools": "Turn on tool calling in the server (vLLM: --enable-auto-tool-choice) "
                        "or pick a model that supports it.",
            "wrong_url": "The address should end in /v1.",
            "context": "Start the server with a larger context length.",
        },
        ServerKind.HOSTED: {
            "unreachable": "Check your internet connection and the address in Settings.",
            "unknown_model": "Check the model name in Settings against the provider's model list.",
            "no_tools": "Pick one of the provider's models that supports tool calling.",
            "wrong_url": "Check the API address in Settings; it usually ends in /v1.",
            "context": "Pick a model with a longer context.",
        },
    }
    return fixes[kind].get(problem, "Check the brain address and model in Settings.")
