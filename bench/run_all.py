"""Run every benchmark in bench/, then write bench/summary.json and bench/RESULTS.md.

Each benchmark is a script that prints one JSON object on its last stdout line. Nested
numbers are flattened into the Markdown table, so a new benchmark needs no change here.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
TIMEOUT_S = 900


def machine() -> dict[str, object]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gib = 0.0
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_gib, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def run_one(script: Path) -> dict[str, object]:
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT_S,
            cwd=BENCH_DIR.parent,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    try:
        result = json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": "last line of output was not JSON"}
    result.setdefault("wall_s", round(time.monotonic() - started, 1))
    return result


def flatten(prefix: str, value: object) -> list[tuple[str, object]]:
    if isinstance(value, dict):
        rows = []
        for key, inner in value.items():
            rows.extend(flatten(f"{prefix}.{key}" if prefix else key, inner))
        return rows
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        return [(prefix, value)]
    return []


HEADLINES = (
    ("voice: end of speech → first reply audio, 300 ms silence (median / p95)",
     "voice_latency.silence_300ms.speech_end_to_first_audio_ms", ("median", "p95"), "ms"),
    ("voice: end of speech → first reply audio, 500 ms silence, the default (median / p95)",
     "voice_latency.silence_500ms.speech_end_to_first_audio_ms", ("median", "p95"), "ms"),
    ("voice stages at 300 ms (median): end-of-speech wait / transcription after it / brain first "
     "token / first sentence synthesized / first audio out", "voice_latency.silence_300ms.stage_median_ms",
     ("end_of_speech_wait", "transcription", "brain_first_token", "first_sentence_synthesized",
      "first_audio_out"), "ms"),
    ("turn taking, black-box: end of speech → her first sound, instant brain (median / p95)",
     "turn_taking.instant_brain.speech_end_to_first_sound_ms", ("median", "p95"), "ms"),
    ("turn taking, black-box: end of speech → her first sound, brain's first token after 600 ms (median / p95)",
     "turn_taking.brain_600ms.speech_end_to_first_sound_ms", ("median", "p95"), "ms"),
    ("turn taking: 700 ms thinking pauses in 5 sentences ended early / prepared replies thrown away",
     "turn_taking.thinking_pauses", ("ended_early", "prepared_thrown_away"), ""),
    ("turn model (Smart Turn v3) per decision (median / p95)", "turn_taking.instant_brain",
     ("turn_model_ms_median", "turn_model_ms_p95"), "ms"),
    ("voice through Wyoming servers on loopback: end of speech → first reply audio, 300 ms silence (median / p95)",
     "voice_latency_wyoming.silence_300ms.speech_end_to_first_audio_ms", ("median", "p95"), "ms"),
    ("Wyoming stages at 300 ms (median): transcription after the end-of-speech wait / first sentence synthesized",
     "voice_latency_wyoming.silence_300ms.stage_median_ms", ("transcription", "first_sentence_synthesized"), "ms"),
    ("her voices, first audio of a first sentence on 2 threads (median): Joe (piper) / heart (hibari) / "
     "Mira / Jeeves / Pip", "voices", ("voices.joe.first_audio_ms.first_sentence.median",
                                       "voices.heart.first_audio_ms.first_sentence.median",
                                       "personalities.Mira.first_audio_ms.first_sentence.median",
                                       "personalities.Jeeves.first_audio_ms.first_sentence.median",
                                       "personalities.Pip.first_audio_ms.first_sentence.median"), "ms"),
    ("her voices, real-time factor on 2 threads: Joe / heart / Mira / Jeeves / Pip", "voices",
     ("voices.joe.real_time_factor", "voices.heart.real_time_factor", "personalities.Mira.real_time_factor",
      "personalities.Jeeves.real_time_factor", "personalities.Pip.real_time_factor"), ""),
    ("narration: tool call → first ANNOUNCE sample (median / p95)", "narration_latency.cached_ms",
     ("median", "p95"), "ms"),
    ("face frame interval p99: idle / Whisper transcribing / piper speaking", "face_fps",
     ("idle.interval_p99_ms", "while_transcribing.interval_p99_ms", "while_speaking.interval_p99_ms"), "ms"),
    ("window start-up: shown / first face frame / core ready / ready to listen", "startup",
     ("window_shown_ms", "first_frame_ms", "core_ready_ms", "ready_to_listen_ms"), "ms"),
    ("`companion chat --once` cold start (median)", "brain_turn.brain_turn.chat_once_cold_start",
     ("median_s",), "s"),
    ("open speakers, her echo at -6 dB / 0 dB: self-interruptions in 10 replies", "echo_cancellation",
     ("echo_minus6db.self_interruptions", "echo_0db.self_interruptions"), ""),
    ("open speakers: barge-in stop time at -6 dB (median / p95) and at 0 dB (median / p95)",
     "echo_cancellation", ("echo_minus6db.barge_in_stop_ms.median", "echo_minus6db.barge_in_stop_ms.p95",
                           "echo_0db.barge_in_stop_ms.median", "echo_0db.barge_in_stop_ms.p95"), "ms"),
    ("open speakers: echo removed (ERLE, median) at -6 dB / 0 dB", "echo_cancellation",
     ("echo_minus6db.erle_db.median", "echo_0db.erle_db.median"), "dB"),
    ("echo cancellation CPU per 10 ms frame: offline / live at -6 dB", "echo_cancellation",
     ("offline_cpu_per_10ms_frame.cpu_ms_mean", "echo_minus6db.live_ms_per_10ms_frame"), "ms"),
    ("peak memory of the running voice loop (RSS)", "voice_latency.silence_300ms", ("peak_rss_mb",), "MB"),
    ("window CPU, % of one core: idle / hidden / minimised / listening to silence", "idle_cost",
     ("idle_cpu_percent", "hidden_cpu_percent", "minimised_cpu_percent", "listening_cpu_percent"), "%"),
    ("window memory (RSS): idle without voice / listening", "idle_cost", ("idle_rss_mb", "listening_rss_mb"), "MB"),
)
"""The short table: (what, where in the summary, which values, unit); missing ones are skipped."""


def lookup(tree: object, dotted: str) -> object:
    for key in dotted.split("."):
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def markdown(summary: dict) -> str:
    m = summary["machine"]
    lines = [
        "# Benchmark results",
        "",
        f"Measured by `make bench` on {m['date']}: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gib']} GiB, {m['os']}, Python {m['python']}.",
        "",
        "| what | value |",
        "|---|---|",
    ]
    benches = summary["benches"]
    for label, where, keys, unit in HEADLINES:
        values = [lookup(benches, f"{where}.{key}") for key in keys]
        if all(v is not None for v in values):
            lines.append(f"| {label} | {' / '.join(f'{v:g}' for v in values)} {unit} |")
    failed = [f"{name}: {result['error']}" for name, result in benches.items() if "error" in result]
    if failed:
        lines += ["", "Failed: " + "; ".join(failed)]
    lines += ["", "<details><summary>Every number</summary>", "", "| benchmark | metric | value |",
              "|---|---|---|"]
    for name, result in benches.items():
        for metric, value in flatten("", result):
            lines.append(f"| {name} | {metric} | {value} |")
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def main() -> int:
    scripts = sorted(p for p in BENCH_DIR.glob("*.py") if p.name != Path(__file__).name)
    summary: dict = {"machine": machine(), "benches": {}}
    for script in scripts:
        print(f"bench: {script.name} …", file=sys.stderr, flush=True)
        summary["benches"][script.stem] = run_one(script)
    (BENCH_DIR / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (BENCH_DIR / "RESULTS.md").write_text(markdown(summary))
    print(json.dumps(summary))
    failed = [name for name, result in summary["benches"].items() if "error" in result]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
