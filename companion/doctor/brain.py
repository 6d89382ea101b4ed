"""The doctor's checks of her mind: the brain (reachable, the model present, tool calling real)
and her personality file."""

from __future__ import annotations

from pathlib import Path

from companion.config import Paths, Settings
from companion.doctor.report import Check


def check_personality(settings: Settings, paths: Paths) -> Check:
    from companion.persona.store import PersonalityStore
    from companion.tools import registry

    names = set(registry.discover(plugin_dir=paths.data_dir / "plugins",
                                  enabled_plugins=settings.tools.enabled_plugins).tools())
    path = Path(settings.personality) if settings.personality else paths.personality_file
    if not path.exists():
        return Check("Personality", True, f"{path} will be copied from the default on first start")
    store = PersonalityStore(path, known_tools=lambda: names)
    if store.problems:
        listed = "; ".join(str(p) for p in store.problems)
        return Check("Personality", False, f"{path}: {listed}",
                     "Fix those lines (Settings → Personality → Edit…); until then she keeps her "
                     "last good personality.", essential=False)
    return Check("Personality", True, f"{path} ({store.current.name})")


PROBE_TOOL = {
    "type": "function", "name": "get_time", "description": "Tell the current time.",
    "parameters": {"type": "object", "properties": {}},
}
"""A harmless tool the probe asks for: it is never run, only asked for."""


PROBE_MAX_TOKENS = 64
"""Room for one call (structured or written as text), not for an essay."""


PROBE_TIMEOUT_S = 20.0


def check_brain(settings: Settings) -> list[Check]:
    """Reachable, the model present, and tool calling real: one tiny, bounded request that must
    come back with a call to a harmless test tool (structured or written as text)."""
    import asyncio
    from dataclasses import replace

    from companion.brain.client import BrainError, OpenAIChatModel

    url, model_name = settings.brain.base_url, settings.brain.model
    bounded = replace(settings.brain, read_timeout_s=min(settings.brain.read_timeout_s, PROBE_TIMEOUT_S))

    async def probe() -> list[Check]:
        model = OpenAIChatModel(bounded)
        try:
            try:
                names = await model.list_models()
            except BrainError as exc:
                return [Check("Brain", False, exc.sentence, _brain_fix(exc.code, model))]
            server = await model.describe()
            context = f"; context {server.context_tokens:,} tokens" if server.context_tokens else ""
            checks = [Check("Brain", True, f"{server.name} at {url} answers ({len(names)} models{context})")]
            if names and model_name not in names:
                checks.append(Check("Brain model", False, f"{model_name} is not among {', '.join(names[:6])}",
                                    _brain_fix("unknown_model", model)))
                return checks
            checks.append(Check("Brain model", True, f"{model_name} is there"))
            checks.append(await _probe_tools(model))
            return checks
        finally:
            await model.close()

    return asyncio.run(probe())


async def _probe_tools(model) -> Check:
    import asyncio

    from companion.brain.client import BrainError
    from companion.brain.reply import ReplyStream

    name = "Brain tools"
    messages = [{"role": "user", "content": "What time is it? Answer only by calling the get_time tool."}]
    stream = ReplyStream(known_tools=[PROBE_TOOL["name"]], cap_tokens=PROBE_MAX_TOKENS)
    try:
        reply = await asyncio.wait_for(
            model.complete(messages, [PROBE_TOOL], lambda piece: stream.feed(piece)[1],
                           max_tokens=PROBE_MAX_TOKENS),
            PROBE_TIMEOUT_S,
        )
    except TimeoutError:
        return Check(name, False, f"the tool test took longer than {PROBE_TIMEOUT_S:g} seconds",
                     "A slow or still-loading model; run the doctor again in a minute.", essential=False)
    except BrainError as exc:
        return Check(name, False, exc.sentence, _brain_fix(exc.code, model), essential=False)
    stream.finish()
    if any(call.name == PROBE_TOOL["name"] for call in reply.tool_calls):
        return Check(name, True, f"{model.model} called the test tool")
    if any(call.name == PROBE_TOOL["name"] for call in stream.text_calls("probe_")):
        return Check(name, True, f"{model.model} wrote the test call as text (she reads those too)")
    said = " ".join(stream.text.split())[:80] or "nothing"
    template = " (its chat template has no tool support)" if model.server.tools is False else ""
    return Check(name, False, f"{model.model} answered without calling the test tool{template} "
                              f"(it said: {said!r}); it does not do tools, so she will talk without them",
                 _brain_fix("no_tools", model), essential=False)


def _brain_fix(code: str, model) -> str:
    from companion.brain.server import fix_for

    if code == "auth":
        return "Put the right API key in Settings → Brain, or export COMPANION_API_KEY."
    if code in ("unreachable", "unknown_model", "no_tools", "wrong_url", "context"):
        return fix_for(model.server.kind, code, model.model) + " (Settings → Brain, or --brain-url / --model.)"
    return "Check the brain URL and model in Settings → Brain and try again."
