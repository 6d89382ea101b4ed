"""Each await of a spoken turn, broken in turn: a server dying there, or the user stopping the turn."""

from __future__ import annotations

from faults import (
    FaultPoints,
    check_conversation,
    conversation_wav,
    faults_to_try,
    run_conversation,
)


async def test_every_await_of_a_turn_survives_a_dead_server_or_a_cancel(
        tmp_path_factory, scripted_brain, hearing, piper_voice):
    wav = conversation_wav(tmp_path_factory.mktemp("wav") / "two.wav", piper_voice)
    baseline = FaultPoints()
    outcome = await run_conversation(tmp_path_factory.mktemp("base"), scripted_brain, hearing, piper_voice, wav,
                                     baseline)
    assert check_conversation(outcome, None) == []
    faults = faults_to_try(baseline.passed)
    # The number the closing note quotes: how many faults this conversation is put through.
    print(f"\nfault points: {len(baseline.passed)} awaits passed, {len(faults)} faults tried: {baseline.passed}")
    failures = {}
    for fault in faults:
        outcome = await run_conversation(tmp_path_factory.mktemp("f"), scripted_brain, hearing, piper_voice,
                                         wav, FaultPoints([fault]))
        if problems := check_conversation(outcome, fault):
            failures[str(fault)] = problems
    assert failures == {}
