"""Each await of a spoken turn, broken in turn: a server dying there, or the user stopping the turn.

A baseline conversation lists the awaits (tests/helpers/faults.py); each test then runs the conversation
once per fault. One test per kind of fault keeps each under its timeout on a busy machine."""

from __future__ import annotations

import asyncio

import pytest
from faults import (
    CANCEL,
    KILL,
    Fault,
    FaultPoints,
    cancels_around_a_switch,
    check_conversation,
    conversation_wav,
    faults_to_try,
    run_conversation,
)
from scripted_brain import ScriptedBrain


@pytest.fixture(scope="module")
def two_questions(tmp_path_factory, piper_voice):
    return conversation_wav(tmp_path_factory.mktemp("wav") / "two.wav", piper_voice)


@pytest.fixture(scope="module")
def awaits(tmp_path_factory, whisper_tiny, piper_voice, two_questions) -> list[str]:
    """The awaits a conversation with nothing broken passes, in order (once for both tests).

    Taken from a second conversation, as warm as the ones the faults are put in: the first of a
    test session makes requests no later one repeats (seven more to her hearing server), so run
    alone (not after other voice tests) the faults put there were never reached."""
    with ScriptedBrain() as brain:
        for _ in range(2):
            baseline = FaultPoints()
            outcome = asyncio.run(run_conversation(tmp_path_factory.mktemp("base"), brain, whisper_tiny,
                                                   piper_voice, two_questions, baseline,
                                                   replay_hearing=True))
            assert check_conversation(outcome, None) == []
    return baseline.passed


async def _each(action: str, awaits, tmp_path_factory, scripted_brain, hearing, piper_voice, wav) -> None:
    faults = [f for f in faults_to_try(awaits) if f.action == action]
    # The number the closing note quotes: how many faults the conversation is put through.
    print(f"\nfault points ({action}): {len(faults)} of {len(awaits)} awaits: {[f.point for f in faults]}")
    assert len(faults) >= 10, awaits
    failures, unreached = {}, []
    for fault in faults:
        outcome = await run_conversation(tmp_path_factory.mktemp("f"), scripted_brain, hearing, piper_voice,
                                         wav, FaultPoints([fault]), replay_hearing=True)
        if not outcome.hit:
            unreached.append(fault.point)
        if problems := check_conversation(outcome, fault):
            failures[str(fault)] = problems
    assert failures == {}
    # A background synthesis (her narration cache) may be dropped before it answers on another
    # run, so a point or two of the baseline can go unvisited; most must be hit.
    print(f"unreached this run: {unreached}")
    assert len(unreached) <= len(faults) // 5, unreached


@pytest.mark.timeout(400)
async def test_a_server_dying_at_any_await_of_a_turn_costs_one_notice_and_nothing_the_user_said(
        awaits, tmp_path_factory, scripted_brain, hearing, piper_voice, two_questions):
    await _each(KILL, awaits, tmp_path_factory, scripted_brain, hearing, piper_voice, two_questions)


@pytest.mark.timeout(400)
async def test_the_user_stopping_the_turn_at_any_await_leaves_her_hearing_and_answering_the_next_question(
        awaits, tmp_path_factory, scripted_brain, hearing, piper_voice, two_questions):
    await _each(CANCEL, awaits, tmp_path_factory, scripted_brain, hearing, piper_voice, two_questions)


@pytest.mark.timeout(400)
@pytest.mark.parametrize("kill", ["hear#1>", "say#2>"])
async def test_the_user_stopping_the_turn_before_during_or_after_an_engine_switch_leaves_the_switch_whole(
        kill, tmp_path_factory, scripted_brain, hearing, piper_voice, two_questions):
    """The issue's deaf-for-the-session bug: the switch to her own engine must finish whatever
    becomes of the request that began it."""
    killed = FaultPoints([Fault(kill, KILL)])
    outcome = await run_conversation(tmp_path_factory.mktemp("k"), scripted_brain, hearing, piper_voice,
                                     two_questions, killed, replay_hearing=True)
    assert check_conversation(outcome, killed.faults[0]) == []
    plans = cancels_around_a_switch(killed.passed, killed.faults[0])
    print(f"\nfault points (cancel around the switch at {kill}): {len(plans)}: {[p[1].point for p in plans]}")
    assert any(p[1].point.startswith("own-") for p in plans), killed.passed  # her own engine's awaits
    failures, unreached = {}, []
    for plan in plans:
        points = FaultPoints(plan)
        outcome = await run_conversation(tmp_path_factory.mktemp("f"), scripted_brain, hearing, piper_voice,
                                         two_questions, points, replay_hearing=True)
        if plan[1] not in outcome.hit:
            unreached.append(plan[1].point)
        if problems := check_conversation(outcome, plan[1]):
            failures[" + ".join(map(str, plan))] = problems
    assert failures == {}
    assert len(unreached) <= len(plans) // 4, unreached
