"""Has the user finished? At a pause the turn model listens to how it sounds, the early
transcript shows where the words stopped, and the rule in turn_rule.py weighs the two."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import asdict, dataclass

from companion.voice.turns.endpoint import TurnCheck
from companion.voice.turns.smart_turn import SmartTurn
from companion.voice.turns.turn_rule import TurnRule, Words, read_words

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdict:
    """One decision at a pause: what the model heard, what the words said, and the answer."""

    silence_ms: float
    probability: float
    model_ms: float
    words: Words
    bar: float | None
    """The probability the rule asked of the model here (None: the words said wait)."""
    complete: bool

    @property
    def words_unfinished(self) -> bool:
        return self.words is Words.OPEN

    def as_dict(self) -> dict:
        return {key: round(value, 3) if isinstance(value, float) else str(value) if isinstance(value, Words) else value
                for key, value in asdict(self).items()}


class TurnJudge:
    """Smart Turn (cheap, ~50-80 ms) and the early transcript, fused by `rule` (turn_rule.TurnRule).
    Waiting for that transcript costs nothing extra: the reply needs it anyway."""

    def __init__(self, model: SmartTurn, rule: TurnRule | None = None) -> None:
        self.model = model
        self.rule = rule or TurnRule()

    async def judge(self, check: TurnCheck, transcript: asyncio.Future[str] | None) -> Verdict:
        guess = await self.model.guess(check.audio)
        # Shielded: if this check is abandoned, the transcript is still wanted for the reply.
        words = read_words(await asyncio.shield(transcript) if transcript is not None else "")
        bar = self.rule.bar(words, check.silence_ms)
        complete = bar is not None and guess.probability >= bar
        return Verdict(check.silence_ms, guess.probability, guess.ms, words, bar, complete)


class TurnWatch:
    """Runs the judge for each TurnCheck off the audio path; the ear asks `finished()` on every
    frame, so the endpointer is only ever touched from the ear. One check per pause at a time."""

    def __init__(self, judge: TurnJudge) -> None:
        self.judge = judge
        self._tasks: dict[int, asyncio.Task[Verdict]] = {}
        self.verdicts: dict[int, list[Verdict]] = {}
        """Every answer per pause id, for the latency report."""

    def check(self, event: TurnCheck, transcript: asyncio.Future[str] | None) -> None:
        running = self._tasks.get(event.pause_id)
        if running is not None and not running.done():
            return  # still answering the last check of this pause: skip, the next one comes soon
        self._tasks[event.pause_id] = asyncio.ensure_future(self.judge.judge(event, transcript))

    async def answer(self, pause_id: int) -> bool:
        """Wait for the pending check of `pause_id` (a file source: no real time to keep up with)."""
        task = self._tasks.get(pause_id)
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        return pause_id in self.finished()

    async def answered(self, pause_id: int) -> None:
        """Until the pending check of `pause_id` (if any) has its answer, left for `finished()`."""
        task = self._tasks.get(pause_id)
        if task is not None:
            await asyncio.wait([task])

    def resumed(self, pause_id: int) -> None:
        task = self._tasks.pop(pause_id, None)
        if task is not None:
            task.cancel()

    def finished(self) -> list[int]:
        """Pause ids whose latest answer says the user has finished (each reported once)."""
        done = []
        for pause_id, task in list(self._tasks.items()):
            if not task.done():
                continue
            del self._tasks[pause_id]
            if task.cancelled():
                continue
            if task.exception() is not None:
                log.error("the turn model failed; the silence decides this pause",
                          exc_info=task.exception())
                continue
            verdict = task.result()
            self.verdicts.setdefault(pause_id, []).append(verdict)
            log.debug("turn check after %.0f ms: p=%.2f, words %s (bar %s) → %s", verdict.silence_ms,
                      verdict.probability, verdict.words, verdict.bar, verdict.complete)
            if verdict.complete:
                done.append(pause_id)
        return done

    def take_verdicts(self, pause_id: int | None) -> list[Verdict]:
        """The answers given for `pause_id`; forgets every pause (a new utterance starts afresh)."""
        verdicts = self.verdicts.get(pause_id, []) if pause_id is not None else []
        self.verdicts.clear()
        return verdicts

    def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
