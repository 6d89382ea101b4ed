"""A scripted OpenAI-compatible Chat Completions server for tests, over real HTTP and real SSE.

It stands in for the brain (Ollama or a hosted endpoint). Replies come from a queue, one per
`POST /v1/chat/completions`; every request body is recorded for assertions. It runs on
127.0.0.1 in a background thread (stdlib ThreadingHTTPServer: no extra dependency, and the
server never shares the asyncio loop of the code under test, so a blocked loop cannot hide a
bug and a slow reply cannot block the test).

A reply is a JSON-friendly dict (so the same script works from a file):

    {"text": "[happy] Hello there!"}                         streamed in several chunks
    {"text": "...", "chunks": 5}                             number of content chunks
    {"tool_calls": [{"name": "get_time", "arguments": {}}]}  arguments: dict, or a raw string
                                                             (e.g. "{broken") sent as-is
    {"text": "Let me look.", "tool_calls": [...]}            text first, then the calls
    {"delay": 0.5, ...}                                      wait before answering
    {"chunk_delay": 0.1, ...}                                wait between streamed chunks
    {"hang": true}                                           never answer (until the server stops)
    {"after": threading.Event(), ...}                        answer once the test sets the event
                                                             (in process only: kill something first)
    {"error": 401}                                           invalid API key (OpenAI-shaped body)
    {"error": "unknown_model"}                               404 like Ollama's "model not found"
    {"error": "no_tools"}                                    400 "... does not support tools"
    {"error": 500, "message": "boom"}                        any status with a message
    {"cut": true, "text": "Half a sen"}                      stream some chunks, then drop the socket
    {"for": "JOB:", ...}                                     only for a request whose first user
                                                             message contains "JOB:" (concurrent
                                                             conversations, e.g. a work-mode job)
    {"raw": "data: {...}\n\n...", "status": 200}          replay a recorded response body byte
                                                             for byte (SSE streams event by event);
                                                             see `recorded()` for the fixtures

`pace` (brain_pace.Pace, e.g. LAPTOP_3B; off by default) answers at a real local server's
pace: one request at a time, the prompt's tokens past the cached prefix evaluated at
`prompt_tps`, the reply written at `write_tps`; `slot.timings` holds each request's counts.

`props` (llama.cpp's GET /props) and `show` (Ollama's POST /api/show) answer those routes when
given, so a test can be a llama.cpp or an Ollama server; without them both routes are 404.

Standalone (for the voice, UI and end-to-end tests and benches):

    python tests/helpers/scripted_brain.py --port 0 --script script.json [--record requests.jsonl] [--pace laptop-3b]

prints `ready http://127.0.0.1:PORT/v1` on stdout once listening. The script file holds a
list of replies, or {"replies": [...], "fallback": {...}, "models": [...], "api_key": "..."}.
When the queue is empty the `fallback` reply is used (default: a 500 saying the script ran out).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from brain_pace import PROFILES, Pace, Slot, pieces

Reply = dict[str, Any]

EXHAUSTED: Reply = {"error": 500, "message": "the scripted brain has no more replies"}


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        # A client that leaves (a cancelled turn, a closed keep-alive connection reset) is part
        # of the conversations tested, not a failure of the server's: anything else still prints.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ScriptedBrain:
    """The server object: `push()` replies, read `requests`, `url` is the base URL (…/v1)."""

    def __init__(
        self,
        replies: list[Reply] | None = None,
        *,
        fallback: Reply | None = None,
        models: list[str] | None = None,
        api_key: str | None = None,
        record_file: Path | None = None,
        props: dict[str, Any] | None = None,
        show: dict[str, Any] | None = None,
        pace: Pace | None = None,
    ) -> None:
        self._replies: deque[Reply] = deque(replies or [])
        self.fallback = fallback or EXHAUSTED
        self.models = models or ["qwen2.5:3b", "scripted"]
        self.api_key = api_key
        self.props = props
        self.show = show
        self.slot = Slot(pace) if pace is not None else None
        """The modelled server's one slot and prompt cache (None: answers at once)."""
        self.requests: list[dict[str, Any]] = []
        """Every chat request: {"path", "body", "headers" (lower-case names)} in arrival order."""
        self.warm_ups: list[dict[str, Any]] = []
        """Prompt-cache warm-ups (requests with max_tokens 1): answered "OK", never from the
        queue, so a test's script is not consumed by the start-up warm-up."""
        self._record_file = record_file
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: dict[socket.socket, threading.Thread] = {}
        """Open client connections and the thread serving each."""

    # --- control ------------------------------------------------------------------------
    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def start(self, port: int = 0) -> ScriptedBrain:
        brain = self

        class Handler(_Handler):
            scripted = brain

        self._server = _Server(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        # A short poll interval keeps stop() (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name="scripted-brain", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        # A client that keeps its connection open (HTTP keep-alive) holds a thread here in its
        # read: end those connections, so no thread of the server outlives it.
        with self._lock:
            connections = dict(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in connections.values():
            thread.join(timeout=5)

    def __enter__(self) -> ScriptedBrain:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the server first"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until `count` chat requests have arrived (for tests on another thread)."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.requests) >= count, timeout=timeout):
                raise TimeoutError(f"expected {count} requests, got {len(self.requests)}")
            return list(self.requests)

    def wait_for_warm_ups(self, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.warm_ups) >= count, timeout=timeout):
                raise TimeoutError(f"expected {count} warm-ups, got {len(self.warm_ups)}")
            return list(self.warm_ups)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["body"] for r in self.requests]

    # --- called by the handler ----------------------------------------------------------
    def _record(self, path: str, body: Any, headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers})
            reply = self._take(body)
            self._lock.notify_all()
        if self._record_file is not None:
            with self._record_file.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"path": path, "body": body}) + "\n")
        return reply

    def _take(self, body: Any) -> Reply:
        """The first queued reply meant for this request (see "for"), else the fallback."""
        messages = body.get("messages") if isinstance(body, dict) else None
        first_user = next((str(m.get("content")) for m in messages or []
                           if isinstance(m, dict) and m.get("role") == "user"), "")
        for reply in self._replies:
            if "for" not in reply or reply["for"] in first_user:
                self._replies.remove(reply)
                return reply
        return self.fallback

    def _wait(self, seconds: float) -> bool:
        """Sleep that ends early when the server stops; True if stopping."""
        return self._stopping.wait(seconds)

    def _wait_for(self, gate: threading.Event) -> bool:
        """Until the test sets `gate` (True) or the server stops (False)."""
        while not gate.wait(0.05):
            if self._stopping.is_set():
                return False
        return True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripted: ScriptedBrain

    def setup(self) -> None:
        super().setup()
        # Small SSE writes must leave at once (Nagle + delayed ACK would add ~40 ms each).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.scripted._lock:
            self.scripted._connections[self.connection] = threading.current_thread()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.scripted._lock:
                self.scripted._connections.pop(self.connection, None)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    # --- routes -------------------------------------------------------------------------
    def do_GET(self) -> None:
        if not self._authorised():
            return
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "owned_by": "scripted"} for m in self.scripted.models]
            self._json(200, {"object": "list", "data": data})
        elif self.path.rstrip("/") == "/props" and self.scripted.props is not None:
            self._json(200, self.scripted.props)
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            # The client went away mid-request (a chat process exiting during its warm-up): read
            # as "{}", it took the next scripted reply from the question that came after it.
            self.close_connection = True
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return
        if not self._authorised():
            return
        if self.path.rstrip("/") == "/api/show" and self.scripted.show is not None:
            self._json(200, self.scripted.show)
            return
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        slot = self.scripted.slot
        if slot is None:
            self._answer(body)
            return
        with slot.lock:  # one request at a time, as a one-slot server
            if not slot.prompt(body, self.scripted._wait):
                self._answer(body)

    def _answer(self, body: dict[str, Any]) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        if body.get("max_tokens") == 1:
            with self.scripted._lock:
                self.scripted.warm_ups.append(body)
                self.scripted._lock.notify_all()
            self._stream({"text": "OK", "chunks": 1}, body)
            return
        reply = self.scripted._record(self.path, body, headers)
        if reply.get("hang"):
            self.scripted._wait(3600)
            self.close_connection = True
            return
        if reply.get("delay") and self.scripted._wait(float(reply["delay"])):
            return
        if reply.get("after") is not None and not self.scripted._wait_for(reply["after"]):
            return
        if "raw" in reply:
            self._raw(reply)
        elif "error" in reply:
            self._error(reply, body)
        elif body.get("stream"):
            self._stream(reply, body)
        else:
            self._whole(reply, body)

    # --- replies ------------------------------------------------------------------------
    def _authorised(self) -> bool:
        key = self.scripted.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._json(401, _auth_error())
        return False

    def _error(self, reply: Reply, body: dict[str, Any]) -> None:
        kind = reply["error"]
        model = body.get("model", "")
        if kind in (401, "auth"):
            self._json(401, _auth_error())
        elif kind in (404, "unknown_model"):
            message = reply.get("message") or f'model "{model}" not found, try pulling it first'
            self._json(404, {"error": {"message": message, "type": "api_error", "param": None, "code": None}})
        elif kind == "no_tools":
            message = reply.get("message") or f"registry.ollama.ai/library/{model} does not support tools"
            self._json(400, {"error": {"message": message, "type": "api_error", "param": None, "code": None}})
        else:
            status = int(kind)
            message = reply.get("message") or f"scripted error {status}"
            self._json(status, {"error": {"message": message, "type": "api_error", "param": None, "code": None}})

    def _whole(self, reply: Reply, body: dict[str, Any]) -> None:
        calls = _tool_calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("text") or None}
        if calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ]
        self._json(200, {
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })

    def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        model = body.get("model", "scripted")
        pause = float(reply.get("chunk_delay", 0))
        slot = self.scripted.slot
        if slot is not None:
            pause = max(pause, 1 / slot.pace.write_tps)  # about a token per piece

        def event(delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {
                "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
            if pause and self.scripted._wait(pause):
                raise ConnectionAbortedError("server stopping")

        try:
            event({"role": "assistant", "content": ""})
            text = reply.get("text") or ""
            parts = pieces(text) if slot is not None else _split(text, int(reply.get("chunks", 4)))
            if reply.get("cut"):
                for piece in parts[: max(1, len(parts) // 2)]:
                    event({"content": piece})
                # Drop the connection mid-body: no terminating chunk, no [DONE].
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            for piece in parts:
                event({"content": piece})
            calls = _tool_calls(reply)
            if slot is not None:
                slot.wrote(text)
                written = "".join(call["name"] + call["arguments"] for call in calls)
                if written and self.scripted._wait(slot.write_s(written)):
                    raise ConnectionAbortedError("server stopping")
            for index, call in enumerate(calls):
                event({"tool_calls": [{
                    "index": index, "id": call["id"], "type": "function",
                    "function": {"name": call["name"], "arguments": ""},
                }]})
                # Arguments arrive in pieces, as real servers send them.
                for piece in _split(call["arguments"], 2):
                    event({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            event({}, "tool_calls" if calls else "stop")
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            self.close_connection = True

    def _raw(self, reply: Reply) -> None:
        raw: str = reply["raw"]
        status = int(reply.get("status", 200))
        streamed = raw.lstrip().startswith("data:")
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream" if streamed else "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            # One write per event, as the server sent them.
            for event in raw.split("\n\n") if streamed else [raw]:
                if event.strip():
                    self._chunk((event + "\n\n" if streamed else event).encode())
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            self.close_connection = True  # the client stopped reading (as it may, to stop a reply)

    # --- plumbing -----------------------------------------------------------------------
    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)


def _auth_error() -> dict[str, Any]:
    return {"error": {
        "message": "Incorrect API key provided.", "type": "invalid_request_error",
        "param": None, "code": "invalid_api_key",
    }}


def _tool_calls(reply: Reply) -> list[dict[str, str]]:
    calls = []
    for index, call in enumerate(reply.get("tool_calls") or []):
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append({"id": call.get("id") or f"call_{index}_{call['name']}", "name": call["name"],
                      "arguments": arguments})
    return calls


def _split(text: str, parts: int) -> list[str]:
    """Cut text into about `parts` pieces (never empty pieces), as a stream would arrive."""
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[i:i + size] for i in range(0, len(text), size)]


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llama-server"


def recorded(name: str) -> Reply:
    """A reply that replays the recorded llama.cpp exchange `name` (a file in FIXTURES)."""
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return {"raw": data["response_raw"], "status": data["status"]}


def recorded_request(name: str) -> dict[str, Any]:
    """The request body companion sent when the exchange `name` was recorded."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))["request"]


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user's words in a request, without the turn note companion adds to the newest one."""
    return [re.sub(r"\n\n\[It is [^\]]*\]$", "", str(m.get("content")))
            for m in body.get("messages", []) if m.get("role") == "user"]


def load_script(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return {"replies": data}
    if not isinstance(data, dict):
        raise ValueError("a script is a list of replies or an object with 'replies'")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible brain for tests.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, help="JSON list of replies (or an object)")
    parser.add_argument("--record", type=Path, help="append every request body to this JSONL file")
    parser.add_argument("--pace", choices=sorted(PROFILES), help="answer at a local model server's pace")
    args = parser.parse_args(argv)
    script = load_script(args.script) if args.script else {}
    brain = ScriptedBrain(
        script.get("replies", []), fallback=script.get("fallback"), models=script.get("models"),
        api_key=script.get("api_key"), record_file=args.record,
        pace=PROFILES[args.pace] if args.pace else None,
    ).start(args.port)
    print(f"ready {brain.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        brain.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
