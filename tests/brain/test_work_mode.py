"""Work mode: start_work hands a task to one background job; she reports at a quiet moment; cancel_work stops it."""

from __future__ import annotations

import asyncio

from brain_harness import make_config, registry_with, start_companion, tool

from companion.events import Speak, ToolFinished, TurnFinished, WorkChanged
from companion.tools.builtin import cancel_work, start_work
from companion.tools.registry import spec_from_module

TASK = "JOB: sort the notes"


def work_registry(*extra):
    return registry_with(spec_from_module(start_work), spec_from_module(cancel_work), *extra)


def start_job_script(brain) -> None:
    brain.push(
        {"for": "organise", "tool_calls": [{"name": "start_work", "arguments": {"task": TASK}}]},
        {"for": "organise", "text": "[happy] On it, in the background."},
    )


async def test_a_job_runs_in_work_mode_and_its_result_is_said_at_the_next_quiet_moment(tmp_path, scripted_brain):
    job_may_finish = asyncio.Event()
    job_tool_started = asyncio.Event()

    async def sort_notes(args, ctx):
        job_tool_started.set()
        await job_may_finish.wait()
        return f"sorted in {ctx.mode} mode"

    async def release_job(args, ctx):
        # Runs inside the user's second turn: the job finishes while she is busy.
        job_may_finish.set()
        await recorder.wait_for(lambda: any(e.status == "finished" for e in recorder.of(WorkChanged)))
        return "released"

    start_job_script(scripted_brain)
    scripted_brain.push(
        {"for": "JOB:", "tool_calls": [{"name": "sort_notes", "arguments": {}}]},
        {"for": "JOB:", "text": "[happy] Notes sorted."},
        {"for": "organise", "tool_calls": [{"name": "release", "arguments": {}}]},
        {"for": "organise", "text": "Anything else?"},
    )
    registry = work_registry(tool("sort_notes", sort_notes, toolset="mcp"), tool("release", release_job))
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url), registry)
    first = await companion.ask("please organise my desk")
    assert first.text == "On it, in the background."
    assert recorder.of(WorkChanged)[0] == WorkChanged("running", TASK)
    await asyncio.wait_for(job_tool_started.wait(), 10)
    await companion.ask("keep going")

    notice = f"My background job is done ({TASK}): Notes sorted."
    kinds = [(type(e).__name__, getattr(e, "text", "")) for e in recorder.events
             if isinstance(e, TurnFinished | Speak)]
    assert kinds[-2:] == [("TurnFinished", "Anything else?"), ("Speak", notice)]
    # The job's own narration stayed private: no announce for its tool reached the user.
    assert all(e.tool != "sort_notes" for e in recorder.of(Speak))
    assert companion.conversation.history[-1] == {"role": "assistant", "content": notice}

    job_bodies = [b for b in scripted_brain.bodies if TASK in str(b["messages"][1]["content"])]
    offered = [t["function"]["name"] for t in job_bodies[0]["tools"]]
    assert "sort_notes" in offered  # a work-only family is offered to the job
    assert "start_work" not in offered and "cancel_work" not in offered
    assert [m["content"] for m in job_bodies[1]["messages"] if m["role"] == "tool"] == ["sorted in work mode"]
    main_offered = [t["function"]["name"] for t in scripted_brain.bodies[0]["tools"]]
    assert "sort_notes" not in main_offered and "start_work" in main_offered
    await companion.close()


async def test_cancel_work_stops_the_running_job(tmp_path, scripted_brain):
    job_tool_started = asyncio.Event()
    job_tool_stopped = asyncio.Event()

    async def endless(args, ctx):
        job_tool_started.set()
        try:
            await asyncio.Event().wait()
        finally:
            job_tool_stopped.set()

    start_job_script(scripted_brain)
    scripted_brain.push(
        {"for": "JOB:", "tool_calls": [{"name": "endless", "arguments": {}}]},
        {"for": "organise", "tool_calls": [{"name": "cancel_work", "arguments": {}}]},
        {"for": "organise", "text": "[neutral] Stopped it."},
    )
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url),
                                                work_registry(tool("endless", endless)))
    await companion.ask("please organise my desk")
    await asyncio.wait_for(job_tool_started.wait(), 10)
    result = await companion.ask("stop that job")
    assert result.text == "Stopped it."
    await asyncio.wait_for(job_tool_stopped.wait(), 10)
    await recorder.wait_for(lambda: recorder.of(WorkChanged)[-1].status == "cancelled")
    assert companion.work.running is False
    finished = [e for e in recorder.of(ToolFinished) if e.name == "cancel_work"]
    assert [e.outcome for e in finished] == ["ok"]
    assert "I stopped the background job" in scripted_brain.bodies[-1]["messages"][-1]["content"]
    assert not any("background job is done" in e.text for e in recorder.of(Speak))
    await companion.close()


async def test_only_one_job_runs_at_a_time_and_cancel_without_a_job_says_so(tmp_path, scripted_brain):
    job_tool_started = asyncio.Event()

    async def endless(args, ctx):
        job_tool_started.set()
        await asyncio.Event().wait()

    start_job_script(scripted_brain)
    scripted_brain.push(
        {"for": "JOB:", "tool_calls": [{"name": "endless", "arguments": {}}]},
        {"for": "organise", "tool_calls": [{"name": "start_work", "arguments": {"task": "JOB: another"}}]},
        {"for": "organise", "text": "Busy."},
    )
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url),
                                                work_registry(tool("endless", endless)))
    await companion.ask("please organise my desk")
    await asyncio.wait_for(job_tool_started.wait(), 10)
    await companion.ask("and another")
    assert "already working on 'JOB: sort the notes'" in scripted_brain.bodies[-1]["messages"][-1]["content"]
    await companion.close()
    assert recorder.of(WorkChanged)[-1].status == "cancelled"
    stopped, sentence = companion.work.cancel()
    assert (stopped, sentence) == (False, "There's no background job running.")


async def test_a_job_may_make_more_calls_than_a_conversation_turn(tmp_path, scripted_brain):
    ran = []

    async def step(args, ctx):
        ran.append(args["n"])
        return "ok"

    parameters = {"type": "object", "properties": {"n": {"type": "integer"}}}
    start_job_script(scripted_brain)
    scripted_brain.push(
        {"for": "JOB:", "tool_calls": [{"name": "step", "arguments": {"n": i}, "id": f"c{i}"} for i in range(12)]},
        {"for": "JOB:", "text": "Twelve steps."},
    )
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url),
                                                work_registry(tool("step", step, parameters=parameters)))
    await companion.ask("please organise my desk")
    await recorder.wait_for(lambda: recorder.of(WorkChanged)[-1].status == "finished")
    assert ran == list(range(12))  # a conversation turn would stop at 8
    await companion.close()


async def test_a_job_whose_brain_fails_reports_the_failure(tmp_path, scripted_brain):
    start_job_script(scripted_brain)
    scripted_brain.push({"for": "JOB:", "error": 500, "message": "out of memory"})
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url), work_registry())
    await companion.ask("please organise my desk")
    await recorder.wait_for(lambda: recorder.of(WorkChanged)[-1].status == "failed")
    await recorder.wait_for(lambda: any("stopped" in e.text for e in recorder.of(Speak)))
    [line] = [e.text for e in recorder.of(Speak) if "stopped" in e.text]
    assert line.startswith(f"My background job on '{TASK}' stopped:") and "out of memory" in line
    await companion.close()


async def test_a_background_job_keeps_its_brain_across_a_change_of_the_brain_url(tmp_path, scripted_brain):
    """The job started on brain A; the user points her at brain B mid-job. Her next question
    goes to B at once; the job carries on with A and finishes (A is closed only after it)."""
    from dataclasses import replace

    from scripted_brain import ScriptedBrain

    job_may_finish = asyncio.Event()
    job_tool_started = asyncio.Event()

    async def sort_notes(args, ctx):
        job_tool_started.set()
        await job_may_finish.wait()
        return "sorted"

    start_job_script(scripted_brain)
    scripted_brain.push({"for": "JOB:", "tool_calls": [{"name": "sort_notes", "arguments": {}}]},
                        {"for": "JOB:", "text": "Notes sorted on brain A."})
    registry = work_registry(tool("sort_notes", sort_notes, toolset="mcp"))
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url), registry)
    with ScriptedBrain([{"text": "Brain B here."}]) as brain_b:
        await companion.ask("please organise my desk")
        await asyncio.wait_for(job_tool_started.wait(), 10)
        settings = companion.settings
        companion.apply_settings(replace(settings, brain=replace(settings.brain, base_url=brain_b.url)))
        assert (await companion.ask("who are you?")).text == "Brain B here."
        job_may_finish.set()
        await asyncio.wait_for(companion.work.job.future, 10)
        await companion.close()
    statuses = [e.status for e in recorder.of(WorkChanged)]
    assert statuses == ["running", "finished"], recorder.of(WorkChanged)
    assert recorder.of(WorkChanged)[-1].result == "Notes sorted on brain A."
    assert len(brain_b.bodies) == 1  # only the new question went to B
    assert sum(TASK in str(b["messages"][1]["content"]) for b in scripted_brain.bodies) == 2
    assert companion.clients is not None and companion.clients.in_use == 0
