"""The six-turn conversation with her brain on a real llama.cpp server, measured from outside
her process: end of speech → her first sound through a sound server, beside the server's own
evaluated / cached prompt tokens and time to first token, per turn.

bench/turn_blackbox.py's machinery, unchanged: the real `companion voice` runs as its own
process on a private PulseAudio at her default settings; this process plays the questions
(espeak-ng voices) into the virtual microphone and records the virtual speaker's monitor, both
stamped on PortAudio's clock. Her brain points at server.py's proxy in front of llama-server
(one slot, prompt cache, --cache-reuse), which keeps llama.cpp's `timings` per request; the
proxy's times are put on PortAudio's clock (the recording callback's offset from
time.monotonic()), so "her request reached the server" and "its first token" are given in ms
after the end of speech as well. Her settings: spoken replies capped at 48 tokens (as bench.py),
the shipped personality. The questions are bench.py's (turn 3 asks the time in Tokyo: her
get_time tool), `--gap` seconds apart; the first is played once her start-up warm-up request has
been answered (bench.py shows the cold first turn), so every turn meets a warm server.

    .venv/bin/python bench/llama_server/blackbox.py [--model smollm2-135m-tools|gemma3-270m-tools|...]
        [--gap 24] [--threads 2] [--unstable-prefix] [--long] [--early-words] [--no-fill] [--keep DIR]

`--long` asks the 25-34-word questions (long_questions.py); `--early-words` runs her through
early_voice.py, which hands the ear's words so far to her preparer, so they go ahead as prompt fills
(companion/brain/fill.py) unless `--no-fill`.

Prints one JSON object, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(ROOT / "bench"), str(ROOT / "tests" / "helpers"), str(ROOT)]

from audio_env import sound_server  # noqa: E402
from long_questions import LONG_QUESTIONS  # noqa: E402
from server import MODELS, Proxy, install_models, llama_server  # noqa: E402
from turn_blackbox import (  # noqa: E402
    LOUD,
    command,
    converse,
    first_sounds,
    her_log,
    script,
    self_loop_ms,
    stages,
)

from bench import QUESTIONS, SPOKEN_CAP, is_fill, request_row, turn_requests  # noqa: E402
from companion.config import Paths, Settings, with_overrides  # noqa: E402
from companion.settings_file import save_settings  # noqa: E402

VOICES = ("en-us", "en-gb", "en-us+f3", "en-gb-scotland", "en-us+m3", "en-029")
"""One espeak-ng voice per question (turn_blackbox.py's first six)."""


def settle(proxy: Proxy):
    """True once her warm-up request (her first) has been answered."""
    def ready() -> bool:
        return bool(proxy.records) and all(
            r["finished"] or "cancelled_ms" in r or "error" in r for r in proxy.records)
    return ready


def loud_before(stage, at: float, span_s: float = 0.3) -> bool:
    """Was she heard in the `span_s` before PortAudio time `at` (still talking when the next
    question began)?"""
    for adc, block in stage.heard:
        if at - span_s <= adc <= at and np.sqrt(np.mean(block ** 2)) > LOUD:
            return True
    return False


def measure(args) -> dict:
    model = MODELS[args.model]
    install_models()
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) if args.keep is None else args.keep
        folder.mkdir(parents=True, exist_ok=True)
        questions = LONG_QUESTIONS if args.long else QUESTIONS
        user, starts, ends = script(list(zip(questions, VOICES, strict=True))[:args.turns], args.gap, folder)
        paths = Paths.default(folder / "cfg")
        paths.config_dir.mkdir(parents=True, exist_ok=True)
        settings = with_overrides(Settings(), brain={"max_tokens_spoken": SPOKEN_CAP, "read_timeout_s": 120.0,
                                                     "fill_while_speaking": not args.no_fill})
        save_settings(paths, replace(settings, personality=str(ROOT / "personality" / "default.md")))
        with llama_server(model, threads=args.threads, log=folder / "server.log") as url:
            proxy = Proxy(url, unstable_prefix=args.unstable_prefix)
            try:
                with sound_server(folder / "pulse") as pulse:
                    loop_ms = self_loop_ms(pulse)
                    cmd = command("companion", proxy.url, folder, Path(), model=args.model)
                    if args.early_words:  # the same command through early_voice.py: the ear's words so far go ahead
                        cmd[:1] = [sys.executable, str(HERE / "early_voice.py")]
                    stage = converse(cmd, pulse, user, folder / "her.log", ready=settle(proxy), after_s=args.gap)
            finally:
                proxy.close()
        log_text = her_log(folder)
    records = proxy.records
    if args.keep is not None:  # what she sent, to replay a turn by hand
        (args.keep / "requests.json").write_text(json.dumps([r["body"] for r in records]))
    for record in records:
        record["at_pa"] = stage.from_monotonic(record["at"])
    warm_up = [r for r in records if r["at_pa"] < stage.dac_time(starts[0])]
    sounds = first_sounds(stage, ends, starts)
    logged = stages(log_text)
    report = []
    for index, end in enumerate(ends):
        spoken = stage.dac_time(end)
        began = stage.dac_time(starts[index])
        until = stage.dac_time(starts[index + 1]) if index + 1 < len(starts) else float("inf")
        turn, others = turn_requests([{**r, "at": r["at_pa"]} for r in records], began, until)
        first = turn[0] if turn else None
        timings = (first or {}).get("timings") or {}
        said = (first or {}).get("last_user") or questions[index]
        mine = next((t for t in logged if t["heard"] and said.lower().startswith(t["heard"].lower()[:30])), None)
        report.append({
            "question": questions[index],
            "fills": [{"at_ms": round((r["at"] - spoken) * 1000), **request_row(r)} for r in others if is_fill(r)],
            "request_after_end_ms": round((first["at"] - spoken) * 1000) if first else None,
            "heard": first["last_user"] if first else None,
            "blackbox_first_sound_ms": sounds[index],
            "her_first_fragment": (mine or {}).get("first_fragment"),
            "prompt_n": timings.get("prompt_n"), "cache_n": timings.get("cache_n"),
            "max_prompt_n": max((r["timings"]["prompt_n"] for r in turn if r.get("timings")), default=None),
            "server_prompt_ms": round(timings["prompt_ms"]) if "prompt_ms" in timings else None,
            "server_ttft_ms": first["ttft_ms"] if first else None,
            "request_at_ms": round((first["at"] - spoken) * 1000) if first else None,
            "first_token_at_ms": (round((first["at"] - spoken) * 1000) + first["ttft_ms"]
                                  if first and first["ttft_ms"] is not None else None),
            "tool_calls": [name for r in turn for name in r["tool_calls"]],
            "still_talking_at_next_question": loud_before(stage, until) if index + 1 < len(starts) else None,
            "her_stages_ms": {k: v for k, v in (mine or {}).items() if k not in ("heard", "checks", "first_fragment")},
            "requests": [request_row(r) for r in turn],
            "early_requests": [request_row(r) for r in others],
        })
    later = report[1:]
    heard = [t["blackbox_first_sound_ms"] for t in later if t["blackbox_first_sound_ms"] is not None]
    evaluated = [t["max_prompt_n"] for t in later if t["max_prompt_n"] is not None]
    return {
        "model": model.name, "threads": args.threads, "unstable_prefix": args.unstable_prefix, "spoken_cap_tokens": SPOKEN_CAP, "gap_s": args.gap,
        "long_questions": args.long, "early_words": args.early_words, "fill_while_speaking": not args.no_fill,
        "sound_path": "companion voice in its own process, private PulseAudio, black-box probe (turn_blackbox.py)",
        "measuring_loop_ms": loop_ms,
        "turns": report,
        "warm_up": [request_row(r) for r in warm_up],
        "median_blackbox_first_sound_ms_turns_2_on": round(statistics.median(heard)) if heard else None,
        "max_prompt_n_turns_2_on": max(evaluated) if evaluated else None,
        "load_average_before": load_before, "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2-135m-tools")
    parser.add_argument("--turns", type=int, default=len(QUESTIONS))
    parser.add_argument("--gap", type=float, default=24.0, help="seconds of silence after each question")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--unstable-prefix", action="store_true",
                        help="rebuild each request as before the byte-stable prefix (bench.py's)")
    parser.add_argument("--long", action="store_true", help="bench.py's 25-34-word questions")
    parser.add_argument("--early-words", action="store_true",
                        help="run her through early_voice.py: the ear's words so far go ahead as prompt fills")
    parser.add_argument("--no-fill", action="store_true", help="brain.fill_while_speaking off")
    parser.add_argument("--keep", type=Path, help="a folder to keep her settings, logs and the server's log in")
    args = parser.parse_args()
    args.turns = max(1, min(args.turns, len(QUESTIONS)))
    print(json.dumps(measure(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
