"""The prompt's size and, against a real server, what caching it buys; prints JSON.

Always: estimated tokens of system message + tool list per mode (conversation: the compact
list of the tools at hand, shared by typed and spoken turns, and the same once the workspace
families are asked for; work: the whole list), beside the prompt as it was before (all 14
conversation tools with whole descriptions, the voice rule inside the system message).

With COMPANION_BENCH_BRAIN_URL (and optionally COMPANION_BENCH_BRAIN_MODEL) pointing at a
real OpenAI-compatible server: time to the first streamed token for a cold prompt, then over
6 turns alternating typed and spoken (each after the start-up warm-up).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from companion.brain.budget import estimate_tokens, tools_tokens  # noqa: E402
from companion.brain.client import OpenAIChatModel, chat_tools  # noqa: E402
from companion.brain.tool_list import compact_tools  # noqa: E402
from companion.brain.toolcall import WORK_TOOLS  # noqa: E402
from companion.events import ReplyDelta, Speak, ToolStarted  # noqa: E402
from companion.persona import build_system_prompt, parse_personality, shipped_default  # noqa: E402
from companion.tools import registry as tool_registry  # noqa: E402
from companion.tools.context import Channel  # noqa: E402
from companion.tools.families import ON_REQUEST_TOOLSETS  # noqa: E402

BEFORE = ROOT / "tests" / "fixtures" / "llama-server" / "structured-tool-call-cancel_work.json"
"""A request as companion sent it before this work (recorded against llama.cpp)."""
TURNS = 6


def prompt_sizes() -> dict[str, object]:
    personality, _ = parse_personality(shipped_default().read_text(encoding="utf-8"))
    system = estimate_tokens(build_system_prompt(personality))
    registry = tool_registry.discover()
    conversation = registry.schemas_for("companion")
    opened = compact_tools(registry.schemas_for("companion", opened=ON_REQUEST_TOOLSETS))
    work = registry.schemas_for("work", exclude=WORK_TOOLS)
    compact, whole = tools_tokens(chat_tools(compact_tools(conversation))), tools_tokens(chat_tools(conversation))
    work_tokens = tools_tokens(chat_tools(work))
    before = json.loads(BEFORE.read_text(encoding="utf-8"))["request"]
    before_system = estimate_tokens(before["messages"][0]["content"])
    before_tools = tools_tokens(before["tools"])
    return {
        "estimate": "companion.brain.budget.estimate_tokens (calibrated on llama.cpp's counts; "
                    "tools include ~120 tokens of chat-template wrapping)",
        "tools_offered": {"conversation": len(conversation), "work": len(work)},
        "system_tokens": system,
        "conversation": {"tools_tokens": compact, "system_plus_tools": system + compact,
                         "same_for_typed_and_spoken": True},
        "conversation, workspace tools asked for": {
            "tools_offered": len(opened), "system_plus_tools": system + tools_tokens(chat_tools(opened))},
        "work": {"tools_tokens": work_tokens, "system_plus_tools": system + work_tokens},
        "whole_descriptions": {"tools_tokens": whole, "system_plus_tools": system + whole},
        "before (recorded request)": {
            "system_tokens": before_system, "tools_tokens": before_tools,
            "system_plus_tools": before_system + before_tools,
            "llama_cpp_counted_prompt": 2562, "same_for_typed_and_spoken": False},
    }


async def first_token_times(url: str, model_name: str | None) -> dict[str, object]:
    from brain_harness import make_config

    from companion.runtime import Companion

    with tempfile.TemporaryDirectory() as tmp:
        config = make_config(Path(tmp), url, personality=shipped_default())  # the prompt users get
        brain = replace(config.settings.brain, model=model_name or config.settings.brain.model,
                        read_timeout_s=600.0)
        probe = OpenAIChatModel(brain)
        if not model_name:
            names = await probe.list_models()
            brain = replace(brain, model=names[0])
            probe = OpenAIChatModel(brain)
        config = replace(config, settings=replace(config.settings, brain=brain))
        companion = Companion(config)
        started = time.perf_counter()
        await companion.start()  # starts the warm-up: its time is the cold prompt
        assert companion._warm_up is not None
        await companion._warm_up
        cold = time.perf_counter() - started
        first: list[float] = []

        def on_event(event: object) -> None:
            if isinstance(event, ReplyDelta | ToolStarted | Speak) and not first:
                first.append(time.perf_counter())

        companion.bus.subscribe(on_event)
        turns = []
        for turn in range(TURNS):
            channel = Channel.TEXT if turn % 2 == 0 else Channel.VOICE
            first.clear()
            begun = time.perf_counter()
            await companion.ask(f"Tell me one short fact about the number {turn + 2}.", channel)
            turns.append({"channel": str(channel), "first_token_s": round((first[0] if first else time.perf_counter())
                                                                          - begun, 3)})
        await companion.close()
        await probe.close()
        return {"model": brain.model, "server": companion.model.server.name if companion.model else "",
                "cold_prompt_s (start-up warm-up)": round(cold, 3), "turns": turns}


def main() -> None:
    result: dict[str, object] = {"prompt": prompt_sizes()}
    url = os.environ.get("COMPANION_BENCH_BRAIN_URL")
    if url:
        result["first_token"] = asyncio.run(first_token_times(url, os.environ.get("COMPANION_BENCH_BRAIN_MODEL")))
    else:
        result["first_token"] = "set COMPANION_BENCH_BRAIN_URL to a real server to measure"
    result["load"] = os.getloadavg()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
