"""The doctor's brain-speed check: her real spoken-turn prompt sent twice (cold, then warm with
a new question after the same prefix), to say how long a spoken turn waits for her brain and
what would shorten it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx

from companion.brain.server import ServerKind
from companion.config import Paths, Settings
from companion.doctor.report import Check
from companion.doctor.stream_timing import StreamFailed, Timing, timed_request

NAME = "Brain speed"
SPEED_TIMEOUT_S = 30.0
"""The whole measurement's bound: a cold laptop reads her ~1,500-token prompt in ~25 s."""
SLOW_TURN_S = 1.5
"""Past this a spoken turn feels slow: her own hearing and voice add ~0.5 s to it."""
WRITE_TOKENS = 16
"""The warm request writes this much, enough to time the writing."""
FIRST_SENTENCE_TOKENS = 12
"""A short first spoken sentence with its emotion tag ("[happy] Sure, it's nine o'clock.")."""
CACHED_S = 0.05
"""Cold within this of warm: the server already had her prompt (she is running, or the doctor ran)."""
SMALLER_MODEL = "qwen2.5:1.5b"
COLD_QUESTION = "What time is it?"
WARM_QUESTION = "And what's the weather like tomorrow?"


def check_brain_speed(settings: Settings, paths: Paths, found: list[Check], *,
                      timeout_s: float = SPEED_TIMEOUT_S) -> Check:
    """Measured only when the brain checks in `found` say it answers with the model there."""
    answers = [check.ok for check in found if check.name == "Brain"]
    if not answers or not answers[0]:
        return Check(NAME, False, "not measured: her brain did not answer (see above)", essential=False)
    if not all(check.ok for check in found if check.name == "Brain model"):
        return Check(NAME, False, "not measured: her brain lacks the model (see above)", essential=False)
    tools_work = all(check.ok for check in found if check.name == "Brain tools")
    try:
        system, tools = _her_prefix(settings, paths)
        return asyncio.run(_measure(settings, system, tools if tools_work else None, timeout_s))
    except Exception as exc:  # the brain lines above must still print
        return Check(NAME, False, f"the check itself failed: {exc!r}", essential=False)


def _her_prefix(settings: Settings, paths: Paths) -> tuple[str, list[dict[str, Any]] | None]:
    """Her system prompt and the compact tool list, as a spoken turn sends them."""
    from companion.brain.tool_list import compact_tools
    from companion.persona import PersonalityStore, build_system_prompt
    from companion.tools import registry
    from companion.tools.context import Mode

    tools = registry.discover(plugin_dir=paths.data_dir / "plugins", disabled=settings.tools.disabled_toolsets,
                              enabled_plugins=settings.tools.enabled_plugins)
    chosen = settings.personality
    store = PersonalityStore(Path(chosen) if chosen else paths.personality_file,
                             known_tools=lambda: tools.tools().keys())
    return build_system_prompt(store.current), compact_tools(tools.schemas_for(str(Mode.COMPANION))) or None


def _turn(system: str, question: str) -> list[dict[str, Any]]:
    from companion.persona import build_turn_note, with_turn_note

    return [{"role": "system", "content": system},
            {"role": "user", "content": with_turn_note(question, build_turn_note(voice=True))}]


async def _measure(settings: Settings, system: str, tools: list[dict[str, Any]] | None,
                   timeout_s: float) -> Check:
    from companion.brain.client import NO_KEY, resolve_api_key
    from companion.brain.server import PROBE_TIMEOUT_S, probe_server

    deadline = time.monotonic() + timeout_s
    key = resolve_api_key(settings.brain)
    kind = (await probe_server(settings.brain.base_url, settings.brain.model, api_key="" if key == NO_KEY else key,
                               timeout_s=min(PROBE_TIMEOUT_S, timeout_s))).kind

    async def timed(question: str, max_tokens: int) -> Timing:
        left = max(0.1, deadline - time.monotonic())
        request = timed_request(settings.brain, _turn(system, question), tools, max_tokens=max_tokens,
                                timeout_s=left, ollama=kind == ServerKind.OLLAMA)
        return await asyncio.wait_for(request, left)

    cold = None
    try:
        cold = await timed(COLD_QUESTION, 1)
        warm = await timed(WARM_QUESTION, WRITE_TOKENS)
    except (TimeoutError, httpx.TimeoutException):
        waited = "first word" if cold is None else f"first word warm (cold: {_s(cold.first_token_s)})"
        return Check(NAME, False, f"her brain wrote no {waited} within {timeout_s:g} s on her spoken-turn "
                                  "prompt, so a spoken turn would keep you waiting; measured no further",
                     _fix(kind), essential=False)
    except (httpx.HTTPError, StreamFailed) as exc:
        return Check(NAME, False, f"not measured: the timing request failed ({exc})", essential=False)
    tokens = cold.prompt_tokens or _estimate(_turn(system, COLD_QUESTION), tools)
    turn_s, detail = _describe(cold, warm, tokens)
    if turn_s > SLOW_TURN_S:
        return Check(NAME, False, detail + f"; that is slow for talking (over {SLOW_TURN_S:g} s)",
                     _fix(kind), essential=False)
    return Check(NAME, True, detail)


def _describe(cold: Timing, warm: Timing, tokens: int) -> tuple[float, str]:
    """The seconds a spoken turn waits for her first sentence, and the sentence saying so."""
    write_tps = _write_speed(warm)
    turn_s = warm.first_token_s + ((FIRST_SENTENCE_TOKENS - 1) / write_tps if write_tps else 0.0)
    detail = (f"Her brain answers in ~{_s(turn_s)} on a spoken turn (first words after "
              f"{_s(cold.first_token_s)} cold, {_s(warm.first_token_s)} warm)")
    prompt_tps, counted = _prompt_speed(cold, warm, tokens)
    if prompt_tps:
        source = "the server's count" if counted else "estimated"
        detail += f"; her prompt of {tokens:,} tokens is read at ~{prompt_tps:,.0f} tokens/s ({source})"
    else:
        detail += f"; her prompt of {tokens:,} tokens took no time to measure (read at once, or cached)"
    if write_tps:
        detail += f", replies written at ~{write_tps:,.0f} tokens/s"
    return turn_s, detail


def _s(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds:.2f} s"


def _prompt_speed(cold: Timing, warm: Timing, tokens: int) -> tuple[float, bool]:
    """Prompt tokens read a second, and whether the server counted them (llama.cpp, Ollama)."""
    prompt_n, prompt_ms = cold.server.get("prompt_n"), cold.server.get("prompt_ms")
    if isinstance(prompt_n, int | float) and isinstance(prompt_ms, int | float) and prompt_n > 1 and prompt_ms > 0:
        return prompt_n / prompt_ms * 1000, True
    # Otherwise the cold request read the whole prompt and the warm one only its new words.
    reading = cold.first_token_s - warm.first_token_s
    return (tokens / reading if reading > CACHED_S else 0.0), False


def _write_speed(warm: Timing) -> float:
    predicted = warm.server.get("predicted_per_second")
    if isinstance(predicted, int | float) and predicted > 0 and warm.server.get("predicted_n", 0) > 1:
        return float(predicted)
    if warm.tokens > 1 and warm.writing_s > 0:
        return (warm.tokens - 1) / warm.writing_s
    return 0.0


def _estimate(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    from companion.brain.budget import message_tokens, tools_tokens

    return sum(message_tokens(m) for m in messages) + tools_tokens(tools)


def _fix(kind: ServerKind) -> str:
    if kind == ServerKind.OLLAMA:
        return (f"A smaller model answers sooner ('ollama pull {SMALLER_MODEL}', then pick it in Settings → "
                "Brain), and keeping the server warm spares the load: Ollama's keep_alive "
                "(OLLAMA_KEEP_ALIVE=-1 keeps the model loaded).")
    if kind == ServerKind.HOSTED:
        return "Pick a faster model from your provider in Settings → Brain, or a small local one."
    return (f"A smaller model answers sooner (a 1.5 B one such as {SMALLER_MODEL}), and keeping the server "
            "running keeps the model loaded and her prompt cached between turns.")
