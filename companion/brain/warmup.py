"""Warm a server's prompt cache at start-up: one tiny request (max_tokens 1) with her exact
prefix, sent from a worker thread with its own client, so the window's thread never waits for
it and the user's first question finds the system message and tools already processed."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from companion.config import BrainSettings

log = logging.getLogger(__name__)


def warm_in_background(
    settings: BrainSettings, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
) -> Future[bool]:
    """Start the warm-up on a daemon thread; the future says whether the server answered.

    A daemon thread, so a slow cold prompt never holds up quitting."""
    done: Future[bool] = Future()

    def run() -> None:
        try:
            answered = asyncio.run(_warm(settings, list(messages), tools))
        except Exception as exc:  # the first turn reports a broken brain in words
            log.info("prompt warm-up failed: %s", exc)
            answered = False
        if done.set_running_or_notify_cancel():  # False when the waiter gave up (she closed)
            done.set_result(answered)

    threading.Thread(target=run, name="brain-warm-up", daemon=True).start()
    return done


async def _warm(settings: BrainSettings, messages: list[dict[str, Any]],
                tools: Sequence[dict[str, Any]] | None) -> bool:
    from companion.brain.client import OpenAIChatModel  # the client stack loads on this thread

    model = OpenAIChatModel(settings)
    try:
        await model.complete(messages, tools, lambda _piece: True, max_tokens=1)
        return True
    finally:
        await model.close()
