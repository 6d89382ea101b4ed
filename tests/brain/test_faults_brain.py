"""The brain broken in the middle of a spoken turn: cut mid-stream, answering garbage mid-stream,
stalled (then timed out, or stopped by the user), or its server gone; she says one sentence
about it, and hears and answers the next question."""

from __future__ import annotations

import asyncio
import json

import pytest
from faults import NOT_ASKED, FaultPoints, check_conversation, conversation_wav, run_conversation


def _sse(*deltas: str) -> str:
    events = [json.dumps({"choices": [{"index": 0, "delta": {"content": d}, "finish_reason": None}]})
              for d in deltas]
    return "".join(f"data: {e}\n\n" for e in events)


# (first reply, brain settings, the error code she must say once: None for none)
BREAKS = {
    "cut mid-stream": ({"cut": True, "text": "Paris is the capital of France. It sits", "chunks": 4}, {}, "cut"),
    "garbage mid-stream": ({"raw": _sse("Paris is the capital ") + "data: {\"choices\": [{\"del\n\n"
                                   + "<html>502 Bad Gateway</html>\n\n", "status": 200}, {}, "garbled"),
    "stalled until it times out": ({"hang": True}, {"read_timeout_s": 1.0}, "timeout"),
}


@pytest.fixture(scope="module")
def two_questions(tmp_path_factory, piper_voice):
    return conversation_wav(tmp_path_factory.mktemp("wav") / "two.wav", piper_voice)


@pytest.mark.parametrize("how", sorted(BREAKS))
async def test_a_brain_broken_in_the_first_turn_gets_one_sentence_and_the_next_question_its_answer(
        how, tmp_path, scripted_brain, hearing, piper_voice, two_questions):
    first, settings, code = BREAKS[how]
    outcome = await run_conversation(tmp_path, scripted_brain, hearing, piper_voice, two_questions, FaultPoints(),
                                     first_reply=first, brain=settings)
    assert check_conversation(outcome, None, brain_error=code) == []


async def test_a_stalled_brain_stopped_by_the_user_says_nothing_of_an_error_and_answers_the_next_question(
        tmp_path, scripted_brain, hearing, piper_voice, two_questions):
    points = FaultPoints()

    async def stop_once_the_brain_holds_it() -> None:
        await asyncio.to_thread(scripted_brain.wait_for_requests, 1)
        points.cancel()  # the user says "stop": she is not left waiting on the question

    points.actions["ask#1>"] = stop_once_the_brain_holds_it
    outcome = await run_conversation(tmp_path, scripted_brain, hearing, piper_voice, two_questions, points,
                                     first_reply={"hang": True})
    assert check_conversation(outcome, None) == []


async def test_a_brain_server_killed_with_the_question_and_started_again_answers_the_next_one(
        tmp_path, scripted_brain, hearing, piper_voice, two_questions):
    port = scripted_brain.port
    points = FaultPoints()
    points.actions["ask#1>"] = scripted_brain.stop
    points.actions["heard#2"] = lambda: scripted_brain.start(port)
    outcome = await run_conversation(tmp_path, scripted_brain, hearing, piper_voice, two_questions, points,
                                     first_reply=NOT_ASKED)
    assert check_conversation(outcome, None, brain_error="unreachable") == []
