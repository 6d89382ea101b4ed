"""Every request starts with the one before it, byte for byte: a server's prompt cache then
covers all but the newest words (what changes from turn to turn goes last)."""

from __future__ import annotations

import asyncio

from brain_harness import make_config, registry_with, start_companion, tool
from brain_pace import Pace, render
from scripted_brain import ScriptedBrain

from companion.tools.context import Channel

OPENING = "<|im_start|>assistant\n"


async def test_each_request_begins_with_everything_the_one_before_it_sent_typed_spoken_and_with_tools(tmp_path):
    replies = [{"text": "[happy] Noted."},
               {"tool_calls": [{"name": "echo", "arguments": {"say": "tea"}}]}, {"text": "[happy] Echoed."},
               {"text": "[neutral] You said tea."}, {"text": "[happy] Bye."}]
    # A fast pace, so the modelled server counts what it had to evaluate of each request.
    with ScriptedBrain(replies, pace=Pace(prompt_tps=50_000, write_tps=5_000)) as brain:
        companion, _ = await start_companion(make_config(tmp_path, brain.url), registry_with(tool("echo")))
        await asyncio.to_thread(brain.wait_for_warm_ups, 1)  # the start-up warm-up goes first
        await companion.ask("remind me at noon", Channel.TEXT)
        await companion.ask("echo tea for me", Channel.VOICE)
        await companion.ask("what did you echo?", Channel.TEXT)
        await companion.ask("goodbye", Channel.VOICE)
        await companion.close()
        bodies, timings = brain.bodies, brain.slot.timings
    assert len(bodies) == 5
    prompts = [render(body) for body in bodies]
    for before, after in zip(prompts, prompts[1:], strict=False):
        # Everything sent before, each turn's note included, then only what is new.
        assert after.startswith(before.removesuffix(OPENING)), (before[-300:], after[-400:])
    # The modelled server evaluated only the newest words of each request after the first
    # (the warm-up cached the system message and tools; each reply was cached as it was written).
    warm_up, *turns = timings
    assert warm_up["cache_n"] == 0 and all(t["cache_n"] > warm_up["prompt_n"] for t in turns[1:])
    assert max(t["prompt_n"] for t in turns) <= 64, turns
    assert companion.conversation.history[0] == {"role": "user", "content": "remind me at noon"}
