"""Has the user finished? At a pause the turn model listens to how it sounds, the early
transcript shows where the words stopped, and both must agree before her turn begins."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from dataclasses import asdict, dataclass

from companion.voice.turns.endpoint import TurnCheck
from companion.voice.turns.smart_turn import SmartTurn

log = logging.getLogger(__name__)

COMPLETE_PROBABILITY = 0.5
"""Smart Turn's own threshold between "finished" and "still going"."""
WORDS_DECIDE_MS = 768
"""After this much silence, words that end a sentence end the turn even while the turn model
still hears the user going on. In the bench, "Why is the sky blue?" in one voice stayed
"not finished" (p 0.01-0.4) for 1.3 s of silence in every run, and two finished sentences
after a thinking pause waited out the whole 2 s patience; a pause that long after words
like these is an answer being waited for."""

# Words a sentence can't stop on: articles, prepositions, conjunctions, possessives, fillers.
# They only ever make her wait longer (up to the patience), never cut anyone off. Auxiliaries
# stay out: "Yes, I can." ends a turn.
UNFINISHED_WORDS = frozenset({
    "a", "an", "the", "to", "of", "in", "on", "at", "for", "with", "from", "about", "into", "onto",
    "by", "over", "under", "between", "through", "without", "and", "or", "but", "because", "if",
    "than", "that", "whether", "nor", "my", "your", "our", "their", "um", "uh", "er", "erm", "hmm",
})


def sounds_unfinished(words: str) -> bool:
    """True when the words so far stop where a sentence can't: on a word like "to", "the" or
    "and", or on a trailing comma, dash or ellipsis (Whisper writes "I would like to...")."""
    text = words.strip()
    if not text:
        return False
    if re.search(r"(\.\.\.|…|,|-|—)\s*$", text):
        return True
    last = re.sub(r"[^a-z']+", " ", text.lower()).split()
    return bool(last) and last[-1] in UNFINISHED_WORDS


def sounds_finished(words: str) -> bool:
    """True when the transcript ends a sentence: a full stop, question or exclamation mark
    (Whisper's punctuation) after a word a sentence can stop on."""
    text = words.strip()
    return bool(re.search(r"[.?!]$", text)) and not sounds_unfinished(text)


@dataclass(frozen=True)
class Verdict:
    """One decision at a pause: what the model heard, what the words said, and the answer."""

    silence_ms: float
    probability: float
    model_ms: float
    words_unfinished: bool
    complete: bool
    by_words: bool = False
    """The words decided (the model still said "not finished" after WORDS_DECIDE_MS)."""

    def as_dict(self) -> dict:
        return {key: round(value, 3) if isinstance(value, float) else value
                for key, value in asdict(self).items()}


class TurnJudge:
    """Smart Turn first (cheap, ~80 ms); when it hears an ending, the early transcript must not
    stop mid-phrase. Waiting for that transcript costs nothing extra: the reply needs it anyway.
    After a long enough pause, a finished sentence in the transcript ends the turn on its own."""

    def __init__(self, model: SmartTurn, threshold: float = COMPLETE_PROBABILITY,
                 words_decide_ms: float = WORDS_DECIDE_MS) -> None:
        self.model = model
        self.threshold = threshold
        self.words_decide_ms = words_decide_ms

    async def judge(self, check: TurnCheck, transcript: asyncio.Future[str] | None) -> Verdict:
        guess = await self.model.guess(check.audio)
        heard_an_end = guess.probability >= self.threshold
        long_pause = check.silence_ms >= self.words_decide_ms
        words = ""
        if transcript is not None and (heard_an_end or long_pause):
            # Shielded: if this check is abandoned, the transcript is still wanted for the reply.
            words = await asyncio.shield(transcript)
        unfinished = sounds_unfinished(words)
        by_words = not heard_an_end and long_pause and sounds_finished(words)
        complete = (heard_an_end and not unfinished) or by_words
        return Verdict(check.silence_ms, guess.probability, guess.ms, unfinished, complete, by_words)


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
            log.debug("turn check after %.0f ms: p=%.2f words unfinished=%s → %s", verdict.silence_ms,
                      verdict.probability, verdict.words_unfinished, verdict.complete)
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
