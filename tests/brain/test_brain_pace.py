"""The scripted brain at a local server's pace: only the prompt past its cached prefix costs time."""

from __future__ import annotations

import time

import httpx
from brain_pace import LAPTOP_3B, Pace, render, tokens
from scripted_brain import ScriptedBrain

SYSTEM = {"role": "system", "content": "You are Testa. " * 200}
FAST = Pace(prompt_tps=4000.0, write_tps=200.0)


def ask(url: str, messages: list[dict]) -> str:
    with httpx.stream("POST", f"{url}/chat/completions", timeout=30,
                      json={"model": "m", "messages": messages, "stream": True}) as reply:
        return "".join(line for line in reply.iter_lines() if '"content"' in line)


def test_a_paced_brain_evaluates_only_the_prompt_past_the_prefix_it_has_cached():
    with ScriptedBrain(pace=FAST) as brain:
        brain.push({"text": "Hello there."}, {"text": "Fine, thanks."})
        first = [SYSTEM, {"role": "user", "content": "Hi"}]
        ask(brain.url, first)
        second = [*first, {"role": "assistant", "content": "Hello there."}, {"role": "user", "content": "How are you?"}]
        started = time.monotonic()
        ask(brain.url, second)
        took = time.monotonic() - started
    one, two = brain.slot.timings
    assert one["cache_n"] == 0 and one["prompt_n"] == tokens(render({"messages": first}))
    # The system prompt, the first question and her answer were cached: only the new words cost.
    assert two["cache_n"] > one["prompt_n"] and two["prompt_n"] < 20
    # "Fine, thanks." is ~4 tokens written at 200 a second, a piece at a time.
    assert took >= tokens("Fine, thanks.") / FAST.write_tps


def test_without_a_pace_the_scripted_brain_answers_at_once_and_keeps_no_slot():
    with ScriptedBrain() as brain:
        brain.push({"text": "Quick."})
        started = time.monotonic()
        ask(brain.url, [SYSTEM, {"role": "user", "content": "Hi"}])
        assert brain.slot is None and time.monotonic() - started < LAPTOP_3B.load_s


def test_a_batch_pays_a_fixed_cost_so_a_turns_few_new_tokens_run_slower_per_token_than_a_long_prompt():
    pace = Pace(prompt_tps=100.0, write_tps=10.0, half_speed_batch=80.0)
    # A spoken turn's ~50 new tokens: one batch, 50 tokens plus the batch's 80 tokens' worth.
    assert pace.prompt_s(50) == (50 + 80) / 100.0
    # A cold 1,200-token prompt goes in three batches of at most 512.
    assert pace.prompt_s(1200) == (1200 + 3 * 80) / 100.0
    # The batch that runs at half speed is the one the field names.
    assert pace.prompt_s(80) == 2 * 80 / pace.prompt_tps
    assert Pace(prompt_tps=100.0, write_tps=10.0).prompt_s(50) == 0.5
