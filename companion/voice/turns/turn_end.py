"""Has the user finished? At a pause the turn model listens to how it sounds, the early
transcript shows where the words stopped, a small language model reads what they mean
(text_turn.py), and the rule in turn_rule.py weighs the three with the silence so far."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass

from companion.voice.turns.endpoint import TurnCheck
from companion.voice.turns.smart_turn import SmartTurn
from companion.voice.turns.text_turn import TextGuess, TextTurn
from companion.voice.turns.turn_rule import TurnRule, Words, read_words

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdict:
    """One decision at a pause: what the model heard, what the words said, and the answer."""

    silence_ms: float
    probability: float
    """Smart Turn's probability (NaN: not asked or not waited for, the words decided alone)."""
    model_ms: float
    words: Words
    bar: float | None
    """The probability the rule asked of the model here (None: the words said wait)."""
    complete: bool
    text: float | None = None
    """The words' model's probability that the message ends here (None: not asked)."""
    text_ms: float = 0.0

    @property
    def words_unfinished(self) -> bool:
        return self.words is Words.OPEN

    def as_dict(self) -> dict:
        return {key: round(value, 3) if isinstance(value, float) else str(value) if isinstance(value, Words) else value
                for key, value in asdict(self).items()}


class TurnJudge:
    """Smart Turn (cheap, ~50-80 ms), the early transcript and the words' model over it, fused
    by `rule` (turn_rule.TurnRule). Waiting for that transcript costs nothing extra: the reply
    needs it anyway. The words' model reads each pause's transcript once (its own thread, beside
    Smart Turn's); `text` defaults to the one loading beside the turn model (`model.text`), and
    is only asked once it has loaded."""

    def __init__(self, model: SmartTurn, rule: TurnRule | None = None, text: TextTurn | None = None) -> None:
        self.model = model
        self.rule = rule or TurnRule()
        self.text = text if text is not None else getattr(model, "text", None)

    async def _read(self, transcript: asyncio.Future[str] | None) -> tuple[str, TextGuess | None]:
        # Shielded: if this check is abandoned, the transcript is still wanted for the reply.
        said = await asyncio.shield(transcript) if transcript is not None else ""
        if self.text is None or not self.text.ready or read_words(said) is Words.OPEN or not said.strip():
            return said, None
        return said, await self.text.probability(said)

    def _read_now(self, transcript: asyncio.Future[str] | None) -> tuple[str, TextGuess | None] | None:
        """The words and their reading when both are already known (a later check of a pause whose
        transcript the words' model has read), else None."""
        if transcript is None or not transcript.done() or transcript.cancelled() or transcript.exception():
            return None
        said = transcript.result()
        if self.text is None or not self.text.ready or read_words(said) is Words.OPEN or not said.strip():
            return said, None
        known = self.text.known(said)
        return (said, known) if known is not None else None

    async def judge(self, check: TurnCheck, transcript: asyncio.Future[str] | None) -> Verdict:
        """Smart Turn and the words side by side; when the words decide alone (open words or the
        model's open verdict hold her, the model's sure verdict ends the turn) the verdict does not
        wait for the sound, which the rule would not read: on a busy machine Smart Turn's answer
        came 150-600 ms after the words' (bench/RESULTS.md). On a later check whose words are already
        read, Smart Turn is not asked at all then."""
        read = self._read_now(transcript)
        sound = None
        if read is None:
            sound = asyncio.ensure_future(self.model.guess(check.audio))
            read = await self._read(transcript)
        said, text = read
        words = read_words(said)
        meaning = text.probability if text is not None else None
        bar = self.rule.bar(words, check.silence_ms, meaning)
        text_ms = text.ms if text is not None else 0.0
        if bar is None or bar <= 0.0:
            if sound is not None:
                sound.add_done_callback(_quietly)  # its answer is not needed; it finishes on its thread
            return Verdict(check.silence_ms, float("nan"), 0.0, words, bar, bar is not None, meaning, text_ms)
        guess = await (sound if sound is not None else self.model.guess(check.audio))
        return Verdict(check.silence_ms, guess.probability, guess.ms, words, bar, guess.probability >= bar, meaning,
                       text_ms)


def _quietly(task: asyncio.Future) -> None:
    """Retrieves an unneeded answer's failure, so it is not reported as never retrieved."""
    if not task.cancelled():
        task.exception()


class TurnWatch:
    """Runs the judge for each TurnCheck off the audio path; the ear asks `finished()` on every
    frame, so the endpointer is only ever touched from the ear. One check per pause at a time."""

    def __init__(self, judge: TurnJudge) -> None:
        self.judge = judge
        self._tasks: dict[int, asyncio.Task[Verdict]] = {}
        self.verdicts: dict[int, list[Verdict]] = {}
        """Every answer per pause id, for the latency report."""
        self.on_hold: Callable[[bool], None] = lambda _holding: None
        """Told True when a check holds her because the words are open, False when that ends (the
        user went on, or the utterance ended): the loop shows it on her face."""
        self._holding = False

    def _hold(self, holding: bool) -> None:
        if holding != self._holding:
            self._holding = holding
            self.on_hold(holding)

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
        self._hold(False)
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
            log.debug("turn check after %.0f ms: p=%.2f, words %s (text %s, bar %s) → %s", verdict.silence_ms,
                      verdict.probability, verdict.words, verdict.text, verdict.bar, verdict.complete)
            self._hold(verdict.bar is None)
            if verdict.complete:
                done.append(pause_id)
        return done

    def take_verdicts(self, pause_id: int | None) -> list[Verdict]:
        """The answers given for `pause_id`; forgets every pause (a new utterance starts afresh)."""
        verdicts = self.verdicts.get(pause_id, []) if pause_id is not None else []
        self.verdicts.clear()
        self._hold(False)
        return verdicts

    def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
