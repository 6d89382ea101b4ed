"""A scripted brain's pace: how long a real local model server would take over each request.

Modelled on llama.cpp's server (and Ollama, which runs it) with one slot: requests are served
one at a time; the prompt is rendered through a chat template and only the tokens after the
longest common prefix with the slot's cache (the previous prompt plus what it wrote) are
evaluated, at `prompt_tps` plus a fixed cost per batch (`half_speed_batch`); the reply is
written at `write_tps`. The first request may also
pay for loading the model (`load_s`). Tokens are counted as UTF-8 bytes / 4 (near what a BPE
tokenizer gives for English and JSON).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

BYTES_PER_TOKEN = 4
UBATCH = 512
"""llama.cpp's physical batch (-ub): a longer prompt is evaluated this many tokens at a time."""


@dataclass(frozen=True)
class Pace:
    prompt_tps: float
    """Prompt tokens evaluated per second (those not in the cached prefix)."""
    write_tps: float
    """Tokens written per second."""
    load_s: float = 0.0
    """Loading the model before the first request is answered (a cold server)."""
    name: str = ""
    half_speed_batch: float = 0.0
    """Each batch's fixed cost, in tokens' worth of evaluation: a batch of this many new tokens
    runs at half `prompt_tps` (llama.cpp reads all the weights once per batch of up to
    UBATCH tokens, however few; 0 models none)."""

    def prompt_s(self, evaluated: int) -> float:
        """Seconds to evaluate `evaluated` new prompt tokens, in batches of up to UBATCH."""
        batches = -(-evaluated // UBATCH)
        return (evaluated + self.half_speed_batch * batches) / self.prompt_tps


LAPTOP_3B = Pace(prompt_tps=60.0, write_tps=8.0, load_s=3.0, half_speed_batch=25.0, name="3B model on a laptop CPU")
"""qwen2.5:3b (Q4_K_M, ~1.9 GB) on a 4-core laptop CPU without a GPU, through Ollama/llama.cpp.
An assumption, not measured here: issue #53 gives "tens of tokens a second" of prompt and
~5-15 tokens a second written for such a laptop; llama.cpp's CPU llama-bench results for 7-8 B
Q4 models on 4-8 core laptop CPUs are ~20-40 t/s prompt and ~4-8 t/s written, and a 3 B model
is ~2.3x smaller, so ~60 t/s prompt and ~8 t/s written sit at the cautious end. Loading
~1.9 GB from an SSD into RAM: ~3 s.

Calibrated on 2026-12-06 against llama.cpp's own llama-server (bench/llama_server/speed.py,
this 2-core shared machine, 2 threads, the packaged models; bench/RESULTS.md "Her brain on a
real llama.cpp server"). Scaled to qwen2.5:3b (3.09 B parameters, Q4_K_M 1.93 GB) the prompt by
parameter count (arithmetic-bound) and the writing by file size (bound by reading the weights):
- Gemma 3 270M Q4_K_M (268 M, 253 MB), best of 11 runs on a ~1,150-token prompt: 629 t/s
  prompt, 68 t/s written, i.e. ~55 t/s prompt and ~9 t/s written for a 3 B model on these two
  cores: the profile's 60 / 8 is that, and a 4-core laptop doubles the cores, so it stays
  cautious. Medians under the neighbours' load (1-min load 3-85) were 3-4x lower.
- SmolLM2-135M Q4_1 (135 M, 98 MB): best 202 t/s prompt, 148 t/s written, i.e. ~9 / ~7.5 t/s
  for 3 B: its writing agrees, its prompt does not scale by parameters (30 layers 576 wide in
  Q4_1: per parameter ~3x Gemma's cost); it is the mechanics model, not a speed model.
The cache counts match: llama.cpp evaluated 41-63 tokens on turns 1-6 of a spoken
conversation where render()'s byte count gives 36-44.

Small batches (half_speed_batch = 25), calibrated on 2026-12-07 (speed.py: 8-256 new tokens
after a cached ~1,150-token prefix, fitted as prompt_ms = overhead + n / tps, 5 runs each,
load 3-19): best runs Gemma 3 270M 51 ms + n / 515 t/s (half speed at 26 tokens), SmolLM2-135M
56 ms + n / 243 t/s (14 tokens); the medians' fits 21 tokens for both. A batch reads all the
weights once however few its tokens, so the fixed cost and the per-token cost both scale with
the model and the half-speed batch carries over to a 3 B model. A spoken turn's ~45 new tokens
then take (45 + 25) / 60 = 1.2 s instead of 0.75 s. In live conversations on a loaded machine
the same tokens ran 2.2-2.7x slower per token than a cold prompt (SmolLM2 at 1 thread ~60 vs
135 t/s; Gemma 3 122 vs 332): two threads waiting on each other at every layer cost a small
batch more when neighbours take the cores; bench/laptop_brain.py --half-speed-batch 75 models
that (2.5x at 50 tokens)."""

PROFILES = {"laptop-3b": LAPTOP_3B}


def render(body: dict[str, Any]) -> str:
    """The prompt as a ChatML template (Qwen2.5's) lays it out: the system message with the
    tools' JSON inside it, then each message, then the assistant's opening."""
    messages = list(body.get("messages") or [])
    system = ""
    if messages and messages[0].get("role") == "system":
        system = str(messages.pop(0).get("content") or "")
    tools = body.get("tools") or []
    if tools:
        system += "\n\n# Tools\n<tools>\n" + "\n".join(json.dumps(t, sort_keys=False) for t in tools) + "\n</tools>"
    parts = [f"<|im_start|>system\n{system}<|im_end|>\n"] if system else []
    for message in messages:
        content = message.get("content") or ""
        if message.get("tool_calls"):
            content += "".join("\n<tool_call>\n" + json.dumps(call.get("function", {})) + "\n</tool_call>"
                               for call in message["tool_calls"])
        role = "user" if message.get("role") == "tool" else message.get("role")
        if message.get("role") == "tool":
            content = f"<tool_response>\n{content}\n</tool_response>"
        parts.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def tokens(text: str) -> int:
    return -(-len(text.encode()) // BYTES_PER_TOKEN)


def common_prefix(a: str, b: str) -> int:
    """Characters a and b share from their start."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class Slot:
    """The server's one slot: its cache and what each request cost (as llama.cpp's timings)."""

    pace: Pace
    cached: str = ""
    loaded: bool = False
    timings: list[dict[str, Any]] = field(default_factory=list)
    """Per request: prompt_n (evaluated), cache_n (from the cache), prompt_ms, wait_ms."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def prompt(self, body: dict[str, Any], wait: Callable[[float], bool]) -> bool:
        """Evaluate `body`'s prompt (holding the slot: call inside `with slot.lock`); `wait(s)`
        sleeps, True when the server is stopping. True when it is."""
        prompt = render(body)
        started = time.monotonic()
        load = 0.0 if self.loaded else self.pace.load_s
        self.loaded = True
        shared = common_prefix(prompt, self.cached)
        cache_n = tokens(prompt[:shared]) if shared else 0
        # llama.cpp evaluates at least the prompt's last token again.
        prompt_n = max(1, tokens(prompt) - cache_n)
        self.cached = prompt
        stopping = wait(load + self.pace.prompt_s(prompt_n))
        self.timings.append({"prompt_n": prompt_n, "cache_n": cache_n, "load_ms": round(load * 1000),
                             "prompt_ms": round((time.monotonic() - started - load) * 1000)})
        return stopping

    def wrote(self, text: str) -> None:
        """What the reply wrote joins the cache (the next request's history starts with it)."""
        self.cached += text

    def write_s(self, text: str) -> float:
        """How long writing `text` takes."""
        return tokens(text) / self.pace.write_tps


def pieces(text: str) -> list[str]:
    """`text` as a server streams it: about one token per piece."""
    return [text[i:i + BYTES_PER_TOKEN] for i in range(0, len(text), BYTES_PER_TOKEN)]
