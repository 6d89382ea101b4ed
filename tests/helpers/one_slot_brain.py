"""The scripted brain as a one-slot server that holds prompt fills open (issue 53's fills).

Every chat request waits for the one before it to end, as on llama.cpp with one slot
(`-np 1`). A fill (max_tokens 1 with the user's words so far, not the start-up warm-up's "Hi")
gets no answer: it holds the slot until the client hangs up, as a long prompt still being
evaluated would. So a real request that does not hang up on its fill first never gets an
answer; one that does is answered at once. `fills` holds each fill's body, `hung_up` those
whose client hung up.
"""

from __future__ import annotations

import io
import json
import select
import socket
import threading
from typing import Any

from scripted_brain import ScriptedBrain, _Handler, _Server

WARM_UP_WORDS = "Hi"
"""The user message of her start-up warm-up (Conversation.warm_up), answered as usual."""


class OneSlotBrain(ScriptedBrain):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.one_slot = threading.Lock()
        self.fills: list[dict[str, Any]] = []
        self.hung_up: list[dict[str, Any]] = []

    def start(self, port: int = 0) -> OneSlotBrain:
        brain = self

        class Handler(_OneSlotHandler):
            scripted = brain

        self._server = _Server(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="one-slot-brain", daemon=True)
        self._thread.start()
        return self

    def wait_for_fills(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.fills) >= count, timeout=timeout):
                raise TimeoutError(f"expected {count} fills, got {len(self.fills)}")
            return list(self.fills)


def is_fill(body: dict[str, Any]) -> bool:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return body.get("max_tokens") == 1 and bool(users) and users[-1].get("content") != WARM_UP_WORDS


class _OneSlotHandler(_Handler):
    scripted: OneSlotBrain

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        with self.scripted.one_slot:
            if isinstance(body, dict) and is_fill(body):
                brain = self.scripted
                with brain._lock:
                    brain.fills.append(body)
                    brain._lock.notify_all()
                if self._held_until_hang_up():
                    with brain._lock:
                        brain.hung_up.append(body)
                        brain._lock.notify_all()
                self.close_connection = True
                return
            # Everything else as the scripted brain answers it (its handler reads the body again).
            rfile, self.rfile = self.rfile, io.BytesIO(raw)
            try:
                super().do_POST()
            finally:
                self.rfile = rfile

    def _held_until_hang_up(self) -> bool:
        """Hold the slot until the client closes its connection (True) or the server stops."""
        connection = self.connection
        while not self.scripted._stopping.is_set():
            readable, _, _ = select.select([connection], [], [], 0.02)
            if not readable:
                continue
            try:
                if connection.recv(1, socket.MSG_PEEK) == b"":
                    return True
            except OSError:
                return True
        return False
