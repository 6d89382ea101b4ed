"""The turn loop against the scripted brain: narration, face, refusals, caps and cancelling."""

from __future__ import annotations

import asyncio
import json

from brain_harness import Recorder, make_config, registry_with, start_companion, tool

from companion.events import (
    ExpressionChanged,
    Outcome,
    ReplyDone,
    Speak,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from companion.tools.context import Channel


def timeline(recorder: Recorder) -> list[str]:
    lines = []
    for e in recorder.events:
        if isinstance(e, Speak):
            lines.append(f"{e.kind}:{e.text}")
        elif isinstance(e, ExpressionChanged):
            lines.append(f"face:{e.name}:{e.reason}")
        elif isinstance(e, ReplyDone):
            lines.append(f"reply:{e.text}")
        elif isinstance(e, ToolStarted):
            lines.append(f"start:{e.name}")
        elif isinstance(e, ToolFinished):
            lines.append(f"end:{e.name}:{e.outcome}")
    return lines


def tool_messages(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def failing(args, ctx):
    return ctx.fail("The disk is on fire.")


async def test_a_successful_tool_is_announced_then_completed_and_the_reply_sets_the_face(tmp_path, scripted_brain):
    scripted_brain.push(
        {"text": "[thinking] Checking.", "tool_calls": [{"name": "echo", "arguments": {"x": 1}}]},
        {"text": "[happy] All good."},
    )
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("check it")
    assert timeline(rec) == [
        "face:thinking:reply", "reply:Checking.", "announce:Running echo.", "start:echo",
        "face:thinking:focus: echo", "end:echo:ok", "complete:echo done.", "face:happy:reply", "reply:All good.",
    ]
    assert (result.text, result.emotion) == ("All good.", "happy")
    assert scripted_brain.bodies[0]["tools"] == [{"type": "function", "function": {
        "name": "echo", "description": "test tool echo", "parameters": {"type": "object", "properties": {}}}}]
    second = scripted_brain.bodies[1]
    assert tool_messages(second) == ["echo ran with {'x': 1}"]
    assert second["messages"][0]["role"] == "system" and "Testa" in second["messages"][0]["content"]
    await companion.close()


async def test_a_failing_tool_says_its_fail_line_shows_the_fail_face_and_the_model_is_told_not_to_repeat(
    tmp_path, scripted_brain
):
    scripted_brain.push(
        {"tool_calls": [{"name": "burn", "arguments": {}}]},
        {"text": "[sad] It failed."},
    )
    registry = registry_with(tool("burn", failing, focus="determined", fail_face="crying"))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry)
    result = await companion.ask("burn it")
    assert timeline(rec) == [
        "announce:Running burn.", "start:burn", "face:determined:focus: burn", "end:burn:failed",
        "fail:burn failed.", "face:crying:fail: burn", "face:sad:reply", "reply:It failed.",
    ]
    [message] = tool_messages(scripted_brain.bodies[1])
    assert "The disk is on fire." in message and "Do not repeat this identical call" in message
    assert [c.outcome for c in result.calls] == [Outcome.FAILED]
    await companion.close()


async def test_heartbeats_come_in_order_while_a_tool_runs_and_the_last_one_repeats(tmp_path, scripted_brain):
    recorder_box: list[Recorder] = []

    async def slow(args, ctx):
        rec = recorder_box[0]
        await rec.wait_for(lambda: len([e for e in rec.of(Speak) if e.kind == "heartbeat"]) >= 4)
        return "slow result"

    scripted_brain.push({"tool_calls": [{"name": "slow", "arguments": {}}]}, {"text": "Done."})
    config = make_config(tmp_path, scripted_brain.url,
                         narration={"heartbeat_first_s": 0.05, "heartbeat_every_s": 0.02})
    companion, rec = await start_companion(config, registry_with(tool("slow", slow, heartbeat=("one", "two", "three"))))
    recorder_box.append(rec)
    await companion.ask("go slow")
    said = rec.speech()
    assert said[0] == ("announce", "Running slow.")
    assert [t for k, t in said if k == "heartbeat"][:4] == ["one", "two", "three", "three"]
    complete = said.index(("complete", "slow done."))
    assert all(k != "heartbeat" for k, _ in said[complete:])
    await companion.close()


async def test_no_heartbeat_is_said_for_a_quick_tool(tmp_path, scripted_brain):
    scripted_brain.push({"tool_calls": [{"name": "echo", "arguments": {}}]}, {"text": "Done."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    await companion.ask("quick")
    assert [k for k, _ in rec.speech()] == ["announce", "complete"]
    await companion.close()


async def test_a_switched_off_family_is_refused_never_announced_and_not_offered(tmp_path, scripted_brain):
    ran = []

    async def files(args, ctx):
        ran.append(args)
        return "listed"

    scripted_brain.push({"tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": "Sorry."})
    registry = registry_with(tool("list_files", files, toolset="file"), tool("echo"))
    registry.set_toolset_enabled("file", False)
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry)
    result = await companion.ask("list my files")
    assert ran == []
    assert rec.speech() == []
    assert [e.outcome for e in rec.of(ToolFinished)] == [Outcome.REFUSED]
    assert "switched off the file tools" in tool_messages(scripted_brain.bodies[1])[0]
    offered = [t["function"]["name"] for t in scripted_brain.bodies[0]["tools"]]
    assert offered == ["echo"]
    assert result.calls[0].outcome == Outcome.REFUSED
    await companion.close()


async def test_companion_turns_never_offer_work_only_families_and_refuse_calls_to_them(tmp_path, scripted_brain):
    scripted_brain.push({"tool_calls": [{"name": "browse", "arguments": {}}]}, {"text": "Can't."})
    registry = registry_with(tool("browse", toolset="mcp"), tool("echo"), tool("remember", toolset="memory"))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry)
    await companion.ask("browse")
    offered = [t["function"]["name"] for t in scripted_brain.bodies[0]["tools"]]
    assert offered == ["echo", "remember"]
    assert "only for background work" in tool_messages(scripted_brain.bodies[1])[0]
    assert rec.of(ToolStarted) == [] and rec.speech() == []
    await companion.close()


async def test_an_unknown_tool_is_refused_with_a_sentence(tmp_path, scripted_brain):
    scripted_brain.push({"tool_calls": [{"name": "fly", "arguments": {}}]}, {"text": "No."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    await companion.ask("fly")
    assert tool_messages(scripted_brain.bodies[1]) == ["There is no tool called fly. Use only the tools you were given."]
    assert rec.speech() == []
    await companion.close()


async def test_malformed_or_mismatched_arguments_get_a_sentence_back_and_run_nothing(tmp_path, scripted_brain):
    ran = []

    async def needs_query(args, ctx):
        ran.append(args)
        return "ok"

    parameters = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    scripted_brain.push(
        {"tool_calls": [{"name": "find", "arguments": "{\"query\": "},
                        {"name": "find", "arguments": {"query": 5}, "id": "c2"},
                        {"name": "find", "arguments": {}, "id": "c3"}]},
        {"text": "[confused] Hmm."},
    )
    registry = registry_with(tool("find", needs_query, parameters=parameters))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry)
    result = await companion.ask("find")
    bad_json, wrong_type, missing = tool_messages(scripted_brain.bodies[1])
    assert "not valid JSON" in bad_json
    assert "query: 5 is not of type 'string'" in wrong_type
    assert "'query' is a required property" in missing
    assert ran == [] and rec.speech() == []
    assert result.emotion == "confused"
    # The broken JSON is not echoed back into the history (servers may reject it).
    calls = scripted_brain.bodies[1]["messages"][-4]["tool_calls"]
    assert all(json.loads(c["function"]["arguments"]) is not None for c in calls)
    await companion.close()


async def test_an_exact_repeat_in_one_turn_is_not_run_again_and_announce_is_said_once(tmp_path, scripted_brain):
    ran = []

    async def count(args, ctx):
        ran.append(args)
        return f"ran {len(ran)}"

    scripted_brain.push(
        {"tool_calls": [{"name": "count", "arguments": {"n": 1}}]},
        {"tool_calls": [{"name": "count", "arguments": {"n": 1}}]},
        {"tool_calls": [{"name": "count", "arguments": {"n": 2}}]},
        {"text": "Counted."},
    )
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("count", count)))
    await companion.ask("count")
    assert ran == [{"n": 1}, {"n": 2}]
    assert "already called count with exactly these arguments" in tool_messages(scripted_brain.bodies[2])[-1]
    assert [k for k, _ in rec.speech()] == ["announce", "complete", "complete"]
    await companion.close()


async def test_a_companion_turn_stops_after_eight_calls_and_then_offers_no_tools(tmp_path, scripted_brain):
    ran = []

    async def step(args, ctx):
        ran.append(args["n"])
        return "stepped"

    parameters = {"type": "object", "properties": {"n": {"type": "integer"}}}
    scripted_brain.push({"tool_calls": [{"name": "step", "arguments": {"n": i}, "id": f"c{i}"} for i in range(10)]},
                        {"text": "Enough."})
    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url),
                                         registry_with(tool("step", step, parameters=parameters)))
    await companion.ask("step a lot")
    assert ran == list(range(8))
    messages = tool_messages(scripted_brain.bodies[1])
    assert all("limit of 8 tool calls" in m for m in messages[8:])
    assert "tools" not in scripted_brain.bodies[1]
    await companion.close()


async def test_after_two_failures_a_companion_turn_runs_no_more_tools(tmp_path, scripted_brain):
    scripted_brain.push(
        {"tool_calls": [{"name": "burn", "arguments": {"n": i}, "id": f"c{i}"} for i in range(3)]},
        {"text": "Stopping."},
    )
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("burn", failing)))
    await companion.ask("burn")
    assert [e.outcome for e in rec.of(ToolFinished)] == [Outcome.FAILED, Outcome.FAILED, Outcome.REFUSED]
    assert "already failed this turn" in tool_messages(scripted_brain.bodies[1])[2]
    await companion.close()


async def test_tool_output_is_capped_at_16000_characters_and_says_it_was_cut(tmp_path, scripted_brain):
    async def huge(args, ctx):
        return "x" * 20_000

    scripted_brain.push({"tool_calls": [{"name": "huge", "arguments": {}}]}, {"text": "Long."})
    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("huge", huge)))
    await companion.ask("huge")
    [message] = tool_messages(scripted_brain.bodies[1])
    assert message.startswith("x" * 16_000) and "x" * 16_001 not in message
    assert "output cut: showing the first 16,000 of 20,000 characters" in message
    await companion.close()


async def test_a_tool_that_overruns_its_budget_is_stopped_and_fails(tmp_path, scripted_brain):
    cancelled = []

    async def stuck(args, ctx):
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.append(True)

    scripted_brain.push({"tool_calls": [{"name": "stuck", "arguments": {}}]}, {"text": "It hung."})
    config = make_config(tmp_path, scripted_brain.url, tools={"text_budget_s": 0.1})
    companion, rec = await start_companion(config, registry_with(tool("stuck", stuck)))
    result = await companion.ask("hang")
    assert cancelled == [True]
    assert result.calls[0].outcome == Outcome.FAILED
    assert "took longer than 0.6 seconds" in tool_messages(scripted_brain.bodies[1])[0]
    assert ("fail", "stuck failed.") in rec.speech()
    await companion.close()


async def test_a_tool_that_raises_fails_the_call_but_not_the_turn(tmp_path, scripted_brain):
    async def crash(args, ctx):
        raise RuntimeError("kaboom")

    scripted_brain.push({"tool_calls": [{"name": "crash", "arguments": {}}]}, {"text": "[sad] Oops."})
    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("crash", crash)))
    result = await companion.ask("crash")
    assert "kaboom" in tool_messages(scripted_brain.bodies[1])[0]
    assert result.text == "Oops." and result.error is None
    await companion.close()


async def test_cancelling_a_turn_stops_the_running_tool_promptly_and_says_nothing_more(tmp_path, scripted_brain):
    stopped = asyncio.Event()

    async def endless(args, ctx):
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    scripted_brain.push({"text": "Working on it.", "tool_calls": [{"name": "endless", "arguments": {}}]})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("endless", endless)))
    turn = asyncio.ensure_future(companion.ask("go"))
    await rec.wait_for(lambda: bool(rec.of(ToolStarted)))
    assert companion.interrupt("stop")
    result = await turn
    assert stopped.is_set() and result.interrupted
    assert [e.outcome for e in rec.of(ToolFinished)] == [Outcome.INTERRUPTED]
    assert [k for k, _ in rec.speech()] == ["announce"]
    assert rec.of(TurnFinished)[-1].interrupted
    # The history stays a valid conversation: the open call got an answer.
    assert companion.conversation.history[-1]["role"] == "tool"
    await companion.close()


async def test_cancelling_while_the_model_streams_stops_the_stream(tmp_path, scripted_brain):
    scripted_brain.push({"text": "[happy] A very long answer that goes on and on.", "chunks": 10, "chunk_delay": 0.2})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    from companion.events import ReplyDelta

    turn = asyncio.ensure_future(companion.ask("talk"))
    await rec.wait_for(lambda: bool(rec.of(ReplyDelta)))
    companion.interrupt("stop")
    result = await turn
    assert result.interrupted and result.text.startswith("A")
    assert "on and on" not in "".join(e.text for e in rec.of(ReplyDelta))
    assert rec.of(ReplyDone) == []
    companion.note_heard_reply("A")
    assert companion.conversation.history[-1] == {"role": "assistant", "content": "A"}
    await companion.close()


async def test_history_carries_over_between_turns(tmp_path, scripted_brain):
    scripted_brain.push({"text": "[happy] Hi Sam."}, {"text": "[neutral] You are Sam."})
    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    await companion.ask("I am Sam", Channel.VOICE)
    await companion.ask("Who am I?")
    messages = scripted_brain.bodies[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "[happy] Hi Sam."
    await companion.close()


async def test_a_family_switched_off_during_a_turn_is_refused_at_once_for_names_the_model_already_saw(
    tmp_path, scripted_brain
):
    ran = []

    async def switch_off(args, ctx):
        companion.registry.set_toolset_enabled("web", False)
        return "switched"

    async def files(args, ctx):
        ran.append(args)
        return "listed"

    scripted_brain.push(
        {"tool_calls": [{"name": "switch_off", "arguments": {}}]},
        {"tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"text": "Done."},
    )
    registry = registry_with(tool("switch_off", switch_off), tool("list_files", files, toolset="web"))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry)
    await companion.ask("go")
    assert "list_files" in [t["function"]["name"] for t in scripted_brain.bodies[0]["tools"]]
    assert ran == []
    assert [e.outcome for e in rec.of(ToolFinished)] == [Outcome.OK, Outcome.REFUSED]
    assert "list_files" not in [t["function"]["name"] for t in scripted_brain.bodies[2]["tools"]]
    await companion.close()


async def test_a_model_that_never_stops_calling_tools_is_cut_off_and_the_history_stays_valid(
    tmp_path, scripted_brain
):
    scripted_brain.fallback = {"tool_calls": [{"name": "fly", "arguments": {}}]}
    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("loop forever")
    assert result.error is None
    assert len(scripted_brain.bodies) == 12  # 8 calls + 3 spare rounds + one last round without tools
    assert "tools" in scripted_brain.bodies[-2] and "tools" not in scripted_brain.bodies[-1]
    history = companion.conversation.history
    asked = [c["id"] for m in history for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert sorted(asked) == sorted(answered)
    await companion.close()


async def test_a_timeout_raised_inside_a_tool_is_not_mistaken_for_the_budget(tmp_path, scripted_brain):
    async def own_timeout(args, ctx):
        raise TimeoutError("the disk did not answer")

    scripted_brain.push({"tool_calls": [{"name": "disk", "arguments": {}}]}, {"text": "Hm."})
    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("disk", own_timeout)))
    result = await companion.ask("disk")
    assert result.calls[0].outcome == Outcome.FAILED
    message = tool_messages(scripted_brain.bodies[1])[0]
    assert "the disk did not answer" in message and "took longer than" not in message
    await companion.close()


async def test_no_heartbeat_is_said_while_the_user_is_being_asked_for_approval(tmp_path, scripted_brain):
    from companion.events import ApprovalNeeded, ApprovalResolved

    box: list = []

    async def asks(args, ctx):
        companion, rec = box
        companion.bus.emit(ApprovalNeeded("r1", "make build", "runs a command", True, 30.0))
        await asyncio.sleep(0.15)  # an absence: ~15 heartbeat periods pass while the question is open
        box.append(len(rec.speech()))
        companion.bus.emit(ApprovalResolved("r1", "approved"))
        await rec.wait_for(lambda: any(kind == "heartbeat" for kind, _ in rec.speech()))
        return "built"

    scripted_brain.push({"tool_calls": [{"name": "build", "arguments": {}}]}, {"text": "Built."})
    config = make_config(tmp_path, scripted_brain.url,
                         narration={"heartbeat_first_s": 0.01, "heartbeat_every_s": 0.01})
    companion, rec = await start_companion(config, registry_with(tool("build", asks, heartbeat=("tick",))))
    box.extend([companion, rec])
    await companion.ask("build it")
    said_while_asking = box[2]
    assert said_while_asking == 1  # only the announce
    assert ("heartbeat", "tick") in rec.speech()  # and the heartbeat came back after the answer
    await companion.close()
