"""The end-of-turn rule: the early transcript's words and the turn model's probability together.

At each check of a pause two pieces of evidence are at hand: Smart Turn's probability that the
user has finished (how the last words *sounded*) and the early transcript (where the words
*stopped*). The rule, in three lines:

- words that stop where a sentence can't ("to", "the", "and", "um", a trailing comma or
  ellipsis) — **open**: she waits, whatever the sound says, until the patience runs out;
- words that end a sentence (Whisper's full stop, question or exclamation mark after a word a
  sentence can stop on) — **finished**: the model's probability must clear a bar that starts
  at `finished_threshold` at the first check and falls in a straight line to 0 at
  `finished_by_ms` of silence (the longer the silence after a finished sentence, the less
  doubt the sound needs to overcome);
- anything else (no transcript, no punctuation) — **unclear**: the sound alone decides, at
  `threshold`.

With the words' language model (text_turn.py: how likely the user's message ends at these
words), two lines come before the last two, each on its own evidence:

- the model is **sure** the message is complete (probability at least `text_sure`): the turn
  ends at this check, with no more silence, whatever the sound says ("What time is it?");
- the model finds the message **open** (probability under `text_open`): she waits, as for open
  words, but only until `text_open_until_ms` of silence, since the model is sometimes wrong
  about a finished statement ("Thomas Piketty, in his book," waits; "Okay." is not held long).

Between the two (the model **unsure**) after finished words, the bar for the sound is the words'
line's own but higher and slower to fall (`text_unsure_bar`, falling to 0 at `text_unsure_by_ms`):
Whisper puts a full stop on a clause a speaker goes on from ("He was not an ill-disposed young
man." | "unless…"), and with the model unsure the stop alone is weak evidence.

Without the model (not installed, still loading, no transcript) the rule is the three lines
above. The text thresholds are chosen on the pause set's curve (bench/text_turn.py).

The numbers are calibrated on the pause set (bench/pause_set.py, bench/turn_sweep.py: 46
requests with a 0.4-1.5 s thinking pause inside, ten voices that are not hers). No setting
keeps the cuts to 5 % within her patience there, so they are the least dead air (median plus
p95) at no more cuts than the rule before (bench/RESULTS.md, issue 36).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from companion.voice.turns.endpoint import TURN_CHECK_MS

__all__ = ["TurnRule", "Words", "read_words", "sounds_finished", "sounds_unfinished"]

# Words a sentence can't stop on: articles, prepositions, conjunctions, possessives, fillers.
# They only ever make her wait longer (up to the patience), never cut anyone off. Auxiliaries
# stay out: "Yes, I can." ends a turn.
UNFINISHED_WORDS = frozenset({
    "a", "an", "the", "to", "of", "in", "on", "at", "for", "with", "from", "about", "into", "onto",
    "by", "over", "under", "between", "through", "without", "and", "or", "but", "because", "if",
    "than", "that", "whether", "nor", "my", "your", "our", "their", "um", "uh", "er", "erm", "hmm",
})
WANTS_AN_OBJECT = frozenset({"tell", "show", "give", "send", "bring", "get", "find", "buy", "teach", "ask", "play"})
"""Verbs that take two objects: an imperative stopping on "Tell me" or "Show us" has said whom,
not what. (Whisper often writes the stop a sentence can't have: "Give me.")"""
WANTS_MORE = frozenset({"wondering", "wanna", "gonna", "hoping", "trying", "whereas", "which", "who", "where"})
"""Words after which an English sentence goes on: "I was wondering", "I'm trying"."""


# The words' model's thresholds, chosen by bench/text_turn.py on the pause set's tune voices and the
# human tune clips (no terse command held, "Lights off."; at most 10 % of open pauses felt as cut and 1
# mid-sentence turn end a minute; then the least median + p95 dead air; its docstring gives the order
# among equals), for the model's reading lifted by its trained head (text_turn.combined, the head
# weighed 2/3). Pause set, against no words' model: felt cuts 35 % → 10 % (tune) and 15 % → 10 %
# (check), dead air 585 / 1,238 → 662 / 1,344 and 561 / 1,315 → 634 / 2,046 ms. Human recordings:
# mid-sentence turn ends 0.47 / min (tune) and 0.58 / min (check), against 0.47 and 1.16 with the
# rule before (sure 0.5, open 0.2 on the geometric mean, after finished words the bar 0.2 falling to
# 0 at 768 ms whatever the model said), whose check p95 dead air was lower (1,571 ms; bench/RESULTS.md,
# 2026-12-07 helper52).
TEXT_SURE = 0.6
TEXT_OPEN = 0.3
TEXT_OPEN_UNTIL_MS = 1536
TEXT_UNSURE_BAR = 0.5
TEXT_UNSURE_BY_MS = 2000


class Words(StrEnum):
    """What the early transcript says about the sentence."""

    OPEN = "open"
    FINISHED = "finished"
    UNCLEAR = "unclear"


def sounds_unfinished(words: str) -> bool:
    """True when the words so far stop where a sentence can't: on a word like "to", "the" or
    "and", or on a trailing comma, dash or ellipsis (Whisper writes "I would like to...")."""
    text = words.strip()
    if not text:
        return False
    if re.search(r"(\.\.\.|…|,|-|—)\s*$", text):
        return True
    words = re.sub(r"[^a-z']+", " ", text.lower()).split()
    if not words:
        return False
    if words[-1] in UNFINISHED_WORDS or words[-1] in WANTS_MORE:
        return True
    return len(words) >= 2 and words[-1] in ("me", "us") and words[-2] in WANTS_AN_OBJECT


def sounds_finished(words: str) -> bool:
    """True when the transcript ends a sentence: a full stop, question or exclamation mark
    (Whisper's punctuation) after a word a sentence can stop on."""
    text = words.strip()
    return bool(re.search(r"[.?!]$", text)) and not sounds_unfinished(text)


def read_words(words: str) -> Words:
    if sounds_unfinished(words):
        return Words.OPEN
    return Words.FINISHED if sounds_finished(words) else Words.UNCLEAR


@dataclass(frozen=True)
class TurnRule:
    """The calibrated rule (module docstring); `decide` is all of it."""

    threshold: float = 0.7
    """The bar for the model's probability when the words say nothing (Smart Turn's own is 0.5:
    on the pause set 0.7 cut fewer pauses at the same dead air)."""
    finished_threshold: float = 0.2
    """The bar at the first check when the words end a sentence."""
    finished_by_ms: float = 768
    """Silence after finished words at which the bar has fallen to 0 (they end the turn alone).
    A bar falling to 0 only at 2 s cut one request fewer of 40 on the pause set, but kept "Why
    is the sky blue?" (p 0.01-0.2 in one voice) waiting ~1.4 s black-box: p95 1,362 ms."""
    first_check_ms: float = TURN_CHECK_MS
    """Silence of the first check (where the bar starts falling)."""
    text_sure: float = TEXT_SURE
    """The words' model at or above this: the message is complete, the turn ends at once (above 1: never)."""
    text_open: float = TEXT_OPEN
    """The words' model below this: the sentence is open, she waits (0: never)."""
    text_open_until_ms: float = TEXT_OPEN_UNTIL_MS
    """How long an open verdict of the words' model holds her (the patience still ends any turn)."""
    text_unsure_bar: float = TEXT_UNSURE_BAR
    """After finished words the model is unsure of (between open and sure): the bar at the first check."""
    text_unsure_by_ms: float = TEXT_UNSURE_BY_MS
    """… and the silence at which that bar has fallen to 0."""

    def __post_init__(self) -> None:
        if not (0 <= self.threshold <= 1.01 and 0 <= self.finished_threshold <= 1.01):
            raise ValueError("turn thresholds are probabilities (above 1: never)")
        if self.finished_by_ms < self.first_check_ms:
            raise ValueError("the bar can only fall after the first check")
        if not (0 <= self.text_open <= 1 and 0 <= self.text_sure <= 1.01 and self.text_open_until_ms >= 0
                and 0 <= self.text_unsure_bar <= 1.01):
            raise ValueError("the words' thresholds are probabilities and the hold a duration")
        if self.text_unsure_by_ms < self.first_check_ms:
            raise ValueError("the bar can only fall after the first check")

    def bar(self, words: Words, silence_ms: float, text: float | None = None) -> float | None:
        """The probability the sound must reach at `silence_ms` (None: wait), with `text` the
        words' model's probability that the message ends here (None: no model)."""
        if words is Words.OPEN:
            return None
        if text is not None:
            if text >= self.text_sure:
                return 0.0
            if text < self.text_open and silence_ms < self.text_open_until_ms:
                return None
        if words is Words.UNCLEAR:
            return self.threshold
        if text is not None:
            return self._falling(self.text_unsure_bar, self.text_unsure_by_ms, silence_ms)
        return self._falling(self.finished_threshold, self.finished_by_ms, silence_ms)

    def _falling(self, start: float, by_ms: float, silence_ms: float) -> float:
        """A bar of `start` at the first check, falling in a straight line to 0 at `by_ms` of silence."""
        span = by_ms - self.first_check_ms
        left = 0.0 if span <= 0 else max(0.0, 1 - (silence_ms - self.first_check_ms) / span)
        return start * left

    def holds(self, words: Words, silence_ms: float, text: float | None = None) -> bool:
        """True when she waits at `silence_ms` because the words are open (the rule's words, or
        the words' model finding them open), whatever the sound says: the wait her face shows
        as listening (events.HoldingChanged)."""
        return self.bar(words, silence_ms, text) is None

    def decide(self, probability: float, words: Words, silence_ms: float, text: float | None = None) -> bool:
        """True when the user has finished."""
        bar = self.bar(words, silence_ms, text)
        return bar is not None and probability >= bar
