"""Whether her brain answers, asked without a question: at start-up and after a change of
brain, so the window says at once (the Offline pill and banner) when it is not there."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class BrainWatch:
    """Owned by the app. `core()` is the running core (None before it starts)."""

    def __init__(self, window, *, core: Callable[[], object]) -> None:
        self.window = window
        self._core = core

    async def probe(self) -> None:
        """Ask the brain for its models: an error or a missing model shows in the window."""
        from companion.brain.client import BrainError, OpenAIChatModel

        core = self._core()
        if core is None or not hasattr(core.model, "list_models"):
            return
        probe = await asyncio.to_thread(OpenAIChatModel, core.settings.brain)  # SSL setup
        try:
            models = await probe.list_models()
        except BrainError as exc:
            self.window.show_error("brain", exc.code, exc.sentence)
            return
        finally:
            await probe.close()
        model = core.settings.brain.model
        if models and model not in models:
            self.window.show_error("brain", "unknown_model", f"My brain has no model {model}.")
