"""Whether her brain answers, asked without a question: at start-up and after a change of
brain, so the window says at once (the Offline pill and banner) when it is not there; and,
while it is not, again every few seconds, so the window knows when it is back by itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

RETRY_S = 5.0
"""How often an offline brain is asked again."""
OFFLINE_CODES = ("unreachable", "timeout")
"""Brain errors that pass by themselves (a server started, a network back); the others wait
for the user (a key, a URL, a model)."""


class BrainWatch:
    """Owned by the app, which calls `close()` when she ends. `core()` is the running core
    (None before it starts)."""

    def __init__(self, window, *, core: Callable[[], object]) -> None:
        self.window = window
        self._core = core
        self.retry_s = RETRY_S
        self._watching: asyncio.Task | None = None

    def error_seen(self, stage: str, code: str, _sentence: str = "") -> None:
        """A brain error (from a turn or a probe): while it lasts her brain is asked again."""
        if stage == "brain" and code in OFFLINE_CODES and (self._watching is None or self._watching.done()):
            # Its own task, not the app's background work: it lasts as long as the trouble does.
            self._watching = asyncio.ensure_future(self._until_back())

    async def close(self) -> None:
        if self._watching is not None and not self._watching.done():
            self._watching.cancel()
            await asyncio.gather(self._watching, return_exceptions=True)

    async def _until_back(self) -> None:
        from companion.brain.client import BrainError

        while True:
            await asyncio.sleep(self.retry_s)
            core = self._core()
            if core is None or not hasattr(core.model, "list_models"):
                return
            try:
                await self._models(core)
            except BrainError:
                continue
            self.window.brain_back()
            return

    @staticmethod
    async def _models(core) -> list[str]:
        from companion.brain.client import OpenAIChatModel

        probe = await asyncio.to_thread(OpenAIChatModel, core.settings.brain)  # SSL setup
        try:
            return await probe.list_models()
        finally:
            await probe.close()

    async def probe(self) -> None:
        """Ask the brain for its models: an error or a missing model shows in the window."""
        from companion.brain.client import BrainError

        core = self._core()
        if core is None or not hasattr(core.model, "list_models"):
            return
        try:
            models = await self._models(core)
        except BrainError as exc:
            self.window.show_error("brain", exc.code, exc.sentence)
            self.error_seen("brain", exc.code)
            return
        model = core.settings.brain.model
        if models and model not in models:
            self.window.show_error("brain", "unknown_model", f"My brain has no model {model}.")
