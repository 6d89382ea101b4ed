"""The words' model after issue 52's second half: int8 weights a quarter the size, and a trained
head that reads terse commands as complete and open phrases as open."""

from __future__ import annotations

import numpy as np
import pytest

from companion.voice.turns.text_model.head import HEAD_FILE, TurnHead
from companion.voice.turns.text_model.q8 import Q8, Scratch
from companion.voice.turns.text_turn import TEXT_MODEL_SHA256, TextTurn, resolve_text_model

TERSE = ("Ten of clubs.", "Lights off.", "Next song.", "Yes.", "Stop.")
"""Complete requests in no line of the head's training set (bench/text_turn_train/requests.txt)."""
OPEN = ("Could you", "Thomas Piketty, in his book,", "Could you.", "Set the")


@pytest.fixture(scope="module")
def text_model() -> TextTurn:
    model = TextTurn(resolve_text_model())
    model.load()
    return model


def test_terse_commands_the_head_never_saw_read_as_complete_where_the_model_alone_doubts_them(text_model):
    for words in TERSE:
        guess = text_model.probability_sync(words)
        assert guess.zero_shot < 0.25, words  # the model alone: a user may go on after them
        assert guess.head is not None and guess.head > 0.6, words


def test_open_phrases_stay_open_through_the_head(text_model):
    for words in OPEN:
        guess = text_model.probability_sync(words)
        assert guess.head < 0.15 and guess.probability < 0.15, words


def test_the_terse_checks_are_in_no_line_of_the_heads_training_set():
    from pathlib import Path

    requests = Path(__file__).parents[3] / "bench" / "text_turn_train" / "requests.txt"
    lines = {line.replace("|", "").strip().lower() for line in requests.read_text().splitlines()}
    assert not {words.lower() for words in TERSE} & lines


def test_the_shipped_head_belongs_to_the_shipped_model():
    head = TurnHead.load(HEAD_FILE)
    assert head.model_sha256 == TEXT_MODEL_SHA256
    assert head.weights.shape == head.mean.shape == head.scale.shape


def test_the_models_matrices_are_int8_and_take_under_half_of_float32(text_model):
    llama = text_model._model
    blocks = [getattr(b, name) for b in llama.blocks for name in ("wq", "wk", "wv", "wo", "gate", "up", "down")]
    assert all(isinstance(m, Q8) and m.q.dtype == np.int8 for m in blocks)
    stored = sum(m.nbytes for m in blocks) + llama.embedding.nbytes
    as_float32 = sum(m.q.size * 4 for m in blocks) + llama.embedding.nbytes
    assert stored < 0.5 * as_float32


def test_an_int8_product_stays_within_a_percent_of_the_float_one():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(192, 576)).astype(np.float32)  # (outputs, inputs), as GGUF stores it
    x = rng.normal(size=(3, 576)).astype(np.float32)
    exact, quantised = x @ w.T, Q8.of(w).product(x, Scratch())
    assert np.abs(quantised - exact).max() < 0.01 * np.abs(exact).max()


def test_the_rule_no_longer_holds_terse_commands_for_open_words_but_still_holds_open_phrases(text_model):
    from companion.voice.turns.turn_rule import TurnRule, read_words

    rule = TurnRule()  # the shipped thresholds
    for words in ("Lights off.", "Next song.", "Yes.", "Stop."):
        assert not rule.holds(read_words(words), 300, text_model.probability_sync(words).probability), words
    for words in ("Could you.", "Thomas Piketty, in his book."):
        assert rule.holds(read_words(words), 300, text_model.probability_sync(words).probability), words


def test_a_clause_whisper_closes_with_a_full_stop_waits_while_the_sound_doubts_it(text_model):
    from companion.voice.turns.turn_rule import TurnRule, read_words

    # Austen read aloud: "… He was not an ill-disposed young man, | unless to be rather cold hearted…",
    # heard by Whisper as below, Smart Turn at 0.06-0.26 through the 768 ms pause.
    words = ("And Mr. John Dashwood had then leisure to consider how much there might be prudently in his power "
             "to do for them. He was not an old-sposed young man.")
    rule = TurnRule()  # the shipped thresholds
    meaning = text_model.probability_sync(words).probability
    assert rule.text_open <= meaning < rule.text_sure  # the model is unsure, not sure and not open
    assert not rule.decide(0.14, read_words(words), 576, meaning)
    assert rule.decide(0.14, read_words(words), 576)  # the words' line alone ends the turn there
