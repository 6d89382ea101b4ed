"""The turn watch when the user goes on before its answer comes: what a quiet machine would
have answered in time still counts, a gap between words does not."""

from __future__ import annotations

import asyncio

import numpy as np

from companion.voice.turns.endpoint import TurnCheck
from companion.voice.turns.turn_end import IN_TIME_MS, TurnWatch, Verdict
from companion.voice.turns.turn_rule import Words


class HeldJudge:
    """Answers "finished" once `answer` is set: a busy machine's late verdict."""

    def __init__(self) -> None:
        self.answer = asyncio.Event()

    async def judge(self, check: TurnCheck, transcript) -> Verdict:
        await self.answer.wait()
        return Verdict(check.silence_ms, 0.9, 60.0, Words.FINISHED, 0.5, True)


async def finished_after(watch: TurnWatch, judge: HeldJudge, pause_id: int = 7) -> list[int]:
    judge.answer.set()
    await watch.answered(pause_id)
    return watch.finished()


async def test_an_answer_the_user_talked_over_long_after_it_was_asked_still_ends_the_turn_there():
    judge = HeldJudge()
    watch = TurnWatch(judge)
    watch.check(TurnCheck(7, np.zeros(1_600, np.float32), 96.0), None)
    assert watch.resumed(7, silence_ms=96.0 + IN_TIME_MS) is True
    assert await finished_after(watch, judge) == [7]


async def test_an_answer_to_a_gap_between_words_is_dropped_when_the_words_go_on():
    judge = HeldJudge()
    watch = TurnWatch(judge)
    watch.check(TurnCheck(7, np.zeros(1_600, np.float32), 96.0), None)
    assert watch.resumed(7, silence_ms=96.0 + IN_TIME_MS - 32.0) is False
    assert await finished_after(watch, judge) == []


async def test_a_late_answer_about_an_utterance_that_has_ended_is_dropped():
    judge = HeldJudge()
    watch = TurnWatch(judge)
    watch.check(TurnCheck(7, np.zeros(1_600, np.float32), 96.0), None)
    assert watch.resumed(7, silence_ms=800.0) is True
    watch.take_verdicts(8)  # the utterance ended at a later pause before the answer came
    assert await finished_after(watch, judge) == []
