"""While the user still speaks, their words so far go ahead to fill a local server's prompt
cache: the request her turn will start with, built by the same builder, one token asked.
A real request hangs up on an unfinished fill first (one slot: it must not go first), the
same words never go twice, and with the setting off, or to a hosted API, none is sent."""

from __future__ import annotations

import asyncio

from brain_harness import make_config, registry_with, start_companion, tool
from brain_pace import Pace, render
from one_slot_brain import OneSlotBrain, is_fill
from scripted_brain import ScriptedBrain

from companion.brain.fill import fill_wanted
from companion.brain.server import ServerInfo, ServerKind
from companion.config import BrainSettings
from companion.tools.context import Channel
from companion.voice.brain_port import CompanionBrain
from companion.voice.turns.preparing import ReplyPreparer

QUESTION = "What is the tallest mountain in Africa, and how long does it take to climb it?"
SO_FAR = ("What is the tallest", "What is the tallest mountain in Africa,")


async def _started(tmp_path, brain, **brain_settings):
    config = make_config(tmp_path, brain.url, brain=brain_settings)
    companion, _ = await start_companion(config, registry_with(tool("echo")))
    await asyncio.to_thread(brain.wait_for_warm_ups, 1)  # her start-up warm-up goes first
    return companion, ReplyPreparer(CompanionBrain(companion), speaker=None)


async def test_words_so_far_reach_the_server_as_the_real_requests_own_beginning_and_leave_it_only_the_last_words(tmp_path):
    with ScriptedBrain([{"text": "[happy] Hello."}, {"text": "[happy] Kilimanjaro, about a week."}],
                       pace=Pace(prompt_tps=50_000, write_tps=5_000)) as brain:
        companion, preparer = await _started(tmp_path, brain)
        await companion.ask("hello there", Channel.VOICE)  # a turn before: history and its note
        assert preparer.heard_so_far(SO_FAR[0])
        assert preparer.heard_so_far(SO_FAR[1])  # waits for the first if it is still in flight
        fills = await asyncio.to_thread(brain.wait_for_warm_ups, 3)
        assert not preparer.heard_so_far(SO_FAR[1])  # nothing new heard: nothing sent
        await companion.ask(QUESTION, Channel.VOICE)
        await companion.close()
        real = brain.bodies[-1]
        timings = brain.slot.timings
    fills = fills[1:]
    assert [f["messages"][-1]["content"].split("\n\n")[0] for f in fills] == list(SO_FAR)
    for fill in fills:
        assert fill["max_tokens"] == 1 and is_fill(fill)
        # The same request but for the words: system, history with its notes, tools, the note.
        assert fill["messages"][:-1] == real["messages"][:-1] and fill["tools"] == real["tools"]
        words = fill["messages"][-1]["content"].split("\n\n")[0]
        assert real["messages"][-1]["content"].startswith(words)
        assert render(real).startswith(render(fill).split(words)[0] + words)
    # The modelled server's cache held everything up to the last words heard early.
    *_, last_fill, turn = timings
    assert turn["cache_n"] > last_fill["cache_n"] and turn["prompt_n"] < 40, timings[-3:]


async def test_a_real_request_hangs_up_on_an_unfinished_fill_and_is_answered_at_once(tmp_path):
    with OneSlotBrain([{"text": "[happy] Kilimanjaro."}]) as brain:
        companion, preparer = await _started(tmp_path, brain)
        assert preparer.heard_so_far(SO_FAR[0])
        await asyncio.to_thread(brain.wait_for_fills, 1)  # it holds the one slot, unanswered
        assert preparer.heard_so_far(SO_FAR[1])  # queued behind it: dropped by the real request
        result = await asyncio.wait_for(companion.ask(QUESTION, Channel.VOICE), 10)
        await companion.close()
        fills, hung_up = list(brain.fills), list(brain.hung_up)
    assert result.text == "Kilimanjaro." and result.error is None
    assert len(fills) == 1 and hung_up == fills  # the newer words waiting were dropped, not sent


async def test_with_the_setting_off_no_fill_is_sent(tmp_path):
    with ScriptedBrain([{"text": "[happy] Kilimanjaro."}]) as brain:
        companion, preparer = await _started(tmp_path, brain, fill_while_speaking=False)
        assert not preparer.heard_so_far(SO_FAR[0]) and not preparer.heard_so_far(SO_FAR[1])
        await companion.ask(QUESTION, Channel.VOICE)
        await companion.close()
        warm_ups, bodies = list(brain.warm_ups), brain.bodies
    assert len(warm_ups) == 1 and len(bodies) == 1  # the start-up warm-up and the turn only


def test_a_hosted_api_never_gets_a_fill_and_a_local_server_does_by_default():
    settings = BrainSettings()
    assert settings.fill_while_speaking
    assert fill_wanted(settings, ServerInfo(ServerKind.OLLAMA))
    assert fill_wanted(settings, ServerInfo(ServerKind.LLAMA_CPP))
    assert not fill_wanted(settings, ServerInfo(ServerKind.HOSTED))
    assert not fill_wanted(BrainSettings(fill_while_speaking=False), ServerInfo(ServerKind.LLAMA_CPP))
