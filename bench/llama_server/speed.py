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


def measure(base: str) -> dict:
    text = (ROOT / "personality" / "default.md").read_text(encoding="utf-8")
    prompt_runs, write_runs = [], []
    with httpx.Client(timeout=600) as client:
        client.post(f"{base}/completion", json={"prompt": "Hello", "n_predict": 1})  # load, warm
        for _ in range(RUNS):
            long = (text * 8)[:4200]
            reply = client.post(f"{base}/completion", json={
                "prompt": long, "n_predict": 1, "cache_prompt": False}).json()
            prompt_runs.append(reply["timings"])
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
