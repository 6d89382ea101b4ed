"""Brain clients across a settings change: the new one serves the next request, and work in
flight keeps the client it started with until it ends (then the old one is closed).

`Conversation.model` is a `SwitchingModel` (each request leases the current client); a
background job gets a `PinnedModel` (one client for the whole job). The internals of a
client (brain/client.py) are not touched here: this is who owns which client, and when.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from companion.brain.client import ChatModel, ModelReply
from companion.config import BrainSettings

__all__ = ["BrainClients", "PinnedModel", "SwitchingModel"]

log = logging.getLogger(__name__)


class BrainClients:
    """`current` is the client for new requests; `acquire`/`release` count who uses which."""

    def __init__(self, make: Callable[[BrainSettings], ChatModel], settings: BrainSettings) -> None:
        self._make = make
        self.current: ChatModel = make(settings)
        self._users: dict[int, int] = {}
        self._retired: dict[int, ChatModel] = {}

    def replace(self, settings: BrainSettings) -> None:
        """From the next request on, use a client for `settings`."""
        old, self.current = self.current, self._make(settings)
        if self._users.get(id(old), 0):
            self._retired[id(old)] = old  # closed when its last request or job ends
        else:
            _close_later(old)

    def acquire(self) -> ChatModel:
        client = self.current
        self._users[id(client)] = self._users.get(id(client), 0) + 1
        return client

    def release(self, client: ChatModel) -> None:
        left = self._users.get(id(client), 1) - 1
        self._users[id(client)] = left
        if left <= 0:
            self._users.pop(id(client), None)
            retired = self._retired.pop(id(client), None)
            if retired is not None:
                _close_later(retired)

    @property
    def in_use(self) -> int:
        """How many requests and jobs hold a client now."""
        return sum(self._users.values())

    async def close(self) -> None:
        for client in [self.current, *self._retired.values()]:
            close = getattr(client, "close", None)
            if close is not None:
                await close()
        self._retired.clear()


class SwitchingModel:
    """A ChatModel whose every request goes to the client current when it starts."""

    def __init__(self, clients: BrainClients) -> None:
        self.clients = clients

    @property
    def model(self) -> str:
        return self.clients.current.model

    async def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                       on_text: Callable[[str], bool | None], **options: Any) -> ModelReply:
        client = self.clients.acquire()
        try:
            return await client.complete(messages, tools, on_text, **options)
        finally:
            self.clients.release(client)

    def __getattr__(self, name: str) -> Any:
        # list_models and the like: the current client's.
        return getattr(self.clients.current, name)


class PinnedModel:
    """A ChatModel held for a whole job: the client current when the job began, until release()."""

    def __init__(self, clients: BrainClients) -> None:
        self.clients = clients
        self.client = clients.acquire()
        self._released = False

    @property
    def model(self) -> str:
        return self.client.model

    async def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                       on_text: Callable[[str], bool | None], **options: Any) -> ModelReply:
        return await self.client.complete(messages, tools, on_text, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def release(self) -> None:
        if not self._released:
            self._released = True
            self.clients.release(self.client)


def _close_later(client: ChatModel) -> None:
    close = getattr(client, "close", None)
    if close is None:
        return
    try:
        asyncio.get_running_loop().create_task(close())
    except RuntimeError:
        log.debug("no running loop to close an old brain client on")
