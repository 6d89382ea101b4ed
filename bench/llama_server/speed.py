"""This CPU's prompt and writing speed for the packaged models, from llama-server's own timings,
and what they suggest for a 3 B model (tests/helpers/brain_pace.py's "laptop-3b").

Prompt speed: her shipped personality repeated to ~1,000 tokens, sent with cache_prompt off so
every token is evaluated, one token written; writing speed: 128 tokens written (ignore_eos)
after a short prompt. Each five times; the median and the best are reported, with the load
average (the machine is shared: its neighbours' builds and tests halve a run's speed or worse,
so the best run is the nearest to what this CPU does alone).

Scaling to qwen2.5:3b (3.09 B parameters, Q4_K_M 1.93 GB): evaluating a prompt is bound by
arithmetic, ~2 x parameters FLOPs a token, so its speed scales with the parameter count;
writing is bound by reading the weights once a token, so it scales with the model file's size.

    .venv/bin/python bench/llama_server/speed.py [--threads 2] [--model NAME ...]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from server import MODELS, install_models, llama_server  # noqa: E402

QWEN_3B_PARAMS_M = 3090
"""qwen2.5:3b's parameters (Qwen2.5 technical report: 3.09 B)."""
QWEN_3B_BYTES = 1.93e9
"""Ollama's qwen2.5:3b (Q4_K_M) download, 1.9 GB."""
RUNS = 5
BATCHES = (8, 16, 32, 64, 128, 256)
"""New prompt tokens after the cached prefix: a spoken turn's are ~40-60."""


def small_batches(client: httpx.Client, base: str, prefix: list[int], other: list[int]) -> dict[int, dict]:
    """Each batch size's timings, evaluated after `prefix` is in the slot's cache: the prompt is
    sent as token ids, the prefix then `n` tokens from a different place in `other` each time
    (so the cache ends exactly at the prefix)."""
    client.post(f"{base}/completion", json={"prompt": prefix, "n_predict": 1, "cache_prompt": True})
    out, start = {}, 0
    for n in BATCHES:
        reply = client.post(f"{base}/completion", json={
            "prompt": prefix + other[start:start + n], "n_predict": 1, "cache_prompt": True}).json()
        out[n] = reply["timings"]
        start += n + 7
    return out


def fit(rows: list[tuple[int, float]]) -> dict:
    """Least squares of prompt_ms = overhead_ms + n / tps over (n, ms) rows; `half_speed_batch`
    (overhead x tps) is the batch that runs at half the large-batch speed."""
    xs, ys = [n for n, _ in rows], [ms for _, ms in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in rows) / sum((x - mx) ** 2 for x in xs)
    overhead = my - slope * mx
    return {"overhead_ms": round(overhead, 1), "tps": round(1000 / slope, 1),
            "half_speed_batch": round(overhead / slope, 1)}


def measure(base: str) -> dict:
    text = (ROOT / "personality" / "default.md").read_text(encoding="utf-8")
    other = (ROOT / "personality" / "butler.md").read_text(encoding="utf-8") * 4
    prompt_runs, write_runs, batch_runs = [], [], []
    with httpx.Client(timeout=600) as client:
        client.post(f"{base}/completion", json={"prompt": "Hello", "n_predict": 1})  # load, warm
        prefix = client.post(f"{base}/tokenize", json={"content": (text * 8)[:4200]}).json()["tokens"]
        others = client.post(f"{base}/tokenize", json={"content": other}).json()["tokens"]
        for _ in range(RUNS):
            long = (text * 8)[:4200]
            reply = client.post(f"{base}/completion", json={
                "prompt": long, "n_predict": 1, "cache_prompt": False}).json()
            prompt_runs.append(reply["timings"])
            batch_runs.append(small_batches(client, base, prefix, others))
            reply = client.post(f"{base}/completion", json={
                "prompt": "Tell me a long story about a lighthouse keeper.", "n_predict": 128,
                "ignore_eos": True, "cache_prompt": False, "temperature": 0.7}).json()
            write_runs.append(reply["timings"])
    return {
        "prompt_tokens": prompt_runs[0]["prompt_n"],
        "prompt_tps": round(statistics.median(t["prompt_per_second"] for t in prompt_runs), 1),
        "prompt_tps_best": round(max(t["prompt_per_second"] for t in prompt_runs), 1),
        "prompt_tps_runs": [round(t["prompt_per_second"], 1) for t in prompt_runs],
        "write_tokens": write_runs[0]["predicted_n"],
        "write_tps": round(statistics.median(t["predicted_per_second"] for t in write_runs), 1),
        "write_tps_best": round(max(t["predicted_per_second"] for t in write_runs), 1),
        "write_tps_runs": [round(t["predicted_per_second"], 1) for t in write_runs],
        "cached_prefix_tokens": len(prefix),
        "batch_after_prefix": {n: {"prompt_n": batch_runs[0][n]["prompt_n"],
                                   "tps": round(statistics.median(r[n]["prompt_per_second"] for r in batch_runs), 1),
                                   "tps_best": round(max(r[n]["prompt_per_second"] for r in batch_runs), 1),
                                   "ms_median": round(statistics.median(r[n]["prompt_ms"] for r in batch_runs), 1)}
                               for n in BATCHES},
        "batch_fit_median": fit([(r[n]["prompt_n"], statistics.median(x[n]["prompt_ms"] for x in batch_runs))
                                 for r in batch_runs[:1] for n in BATCHES]),
        "batch_fit_best": fit([(r[n]["prompt_n"], min(x[n]["prompt_ms"] for x in batch_runs))
                               for r in batch_runs[:1] for n in BATCHES]),
        "batch_fit_each_run": [fit([(r[n]["prompt_n"], r[n]["prompt_ms"]) for n in BATCHES]) for r in batch_runs],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    args = parser.parse_args()
    install_models()
    out = {"threads": args.threads, "cpus": os.cpu_count(), "models": {}}
    for key in args.model or ("smollm2-135m", "gemma3-270m"):
        model = MODELS[key]
        load = os.getloadavg()[0]
        with llama_server(model, threads=args.threads, port=8092) as url:
            speed = measure(url.removesuffix("/v1"))
        size = model.path.stat().st_size
        speed.update({
            "params_m": model.params_m, "file_bytes": size,
            "load_average_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
            "scaled_to_qwen2.5_3b": {
                "prompt_tps": round(speed["prompt_tps"] * model.params_m / QWEN_3B_PARAMS_M, 1),
                "write_tps": round(speed["write_tps"] * size / QWEN_3B_BYTES, 1),
                "prompt_tps_best": round(speed["prompt_tps_best"] * model.params_m / QWEN_3B_PARAMS_M, 1),
                "write_tps_best": round(speed["write_tps_best"] * size / QWEN_3B_BYTES, 1),
            },
        })
        out["models"][key] = speed
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
