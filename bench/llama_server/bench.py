"""A six-turn spoken conversation with her brain on a real llama.cpp server: per turn, the
prompt tokens the server evaluated and took from its cache, its time to first token, beside
end of speech → her first sound.

llama-server (bench/llama_server/build.sh) runs a packaged small GGUF with one slot, prompt
caching and --cache-reuse; her brain points at a proxy in front of it that keeps llama.cpp's
own `timings` per request (server.py). The questions (espeak-ng, not her voice) are paced in
real time into a real voice session (real Whisper, real voice, a real-time WAV sink), as
bench/laptop_brain.py does; turn 3 asks the time in Tokyo (her get_time tool). Her personality
is the shipped default (the real ~1,150-token spoken prompt); spoken replies are capped at 48
tokens so six turns of a rambling small model stay a few minutes of speech.

These models measure the mechanics (what the cache saves, what is evaluated per turn), not a
3 B model's speed: a 135 M model evaluates a prompt ~20x faster than qwen2.5:3b would.

    .venv/bin/python bench/llama_server/bench.py [--model smollm2-135m|gemma3-270m]
        [--unstable-prefix] [--long] [--no-fill] [--hearing moonshine-base-en] [--turns 6] [--threads 2] [--upstream URL]

`--unstable-prefix` rebuilds each request as before the byte-stable prefix (the turn note only
on the newest question), to show what the cache saved. `--long` asks 25-34-word questions;
the ear's words so far go to her preparer (early_words.py) and from there as prompt fills
(brain/fill.py), unless `--no-fill`. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(ROOT / "bench"), str(ROOT / "tests" / "helpers"), str(ROOT)]

from brain_harness import make_config  # noqa: E402
from early_words import install as install_early_words  # noqa: E402
from laptop_brain import ANSWERING, Speaker, espeak, longest_gap, since, spans  # noqa: E402
from long_questions import LONG_QUESTIONS  # noqa: E402
from server import MODELS, Proxy, install_models, llama_server  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.events import EventBus, SpeakingChanged, StateChanged, ToolStarted  # noqa: E402
from companion.runtime import Companion  # noqa: E402
from companion.voice.brain_port import CompanionBrain  # noqa: E402
from companion.voice.factory import load_engines  # noqa: E402
from companion.voice.session import VoiceSession  # noqa: E402
from companion.voice.sound.audio import WavSink  # noqa: E402

QUESTIONS = (
    "Why is the sky blue?",
    "How long should I boil an egg?",
    "What time is it in Tokyo?",
    "Can you recommend a good book?",
    "What is a good name for a cat?",
    "Thanks, that's all for now.",
)
TOOL_TURN = 2
"""The question that needs a tool (get_time), zero-based."""
SPOKEN_CAP = 48
STUCK_S = 30.0
"""The next question waits this long at most for her turn on the last one to begin."""


class TimedSpeaker(Speaker):
    """laptop_brain's user, noting when each question began."""

    def __init__(self, questions) -> None:
        super().__init__(questions)
        self.starts: list[float] = []
        self.heard: list[str] | None = None
        """Her turns so far (the loop's `heard`): the next question waits for the last one's."""

    async def read(self):
        if (self._waiting and self._quiet_since is not None and self.heard is not None
                and len(self.heard) < len(self.ends) and time.monotonic() - self.ends[-1] < STUCK_S):
            # Quiet while the words are still being heard is not her answer given: wait for it.
            self._quiet_since = time.monotonic()
        waiting = self._waiting
        frame = await super().read()
        if waiting and not self._waiting:
            self.starts.append(time.monotonic())
        return frame


def request_row(record: dict) -> dict:
    timings = record.get("timings") or {}
    return {
        "user": record["last_user"],
        "prompt_n": timings.get("prompt_n"), "cache_n": timings.get("cache_n"),
        "prompt_ms": round(timings["prompt_ms"]) if "prompt_ms" in timings else None,
        "predicted_n": timings.get("predicted_n"),
        "ttft_ms": record["ttft_ms"], "tool_calls": record["tool_calls"],
        "finished": record["finished"], "cancelled_ms": record.get("cancelled_ms"),
        "client_hung_up_ms": record.get("client_hung_up_ms"),
        "max_tokens": record["max_tokens"], "tools_offered": len(record["tools"]), "text": record["text"][:120],
    }


def is_fill(record: dict) -> bool:
    """A request that only fills the cache (brain/fill.py: one token asked)."""
    return record["max_tokens"] == 1


def turn_requests(records: list[dict], began: float, until: float,
                  heard: str | None = None) -> tuple[list[dict], list[dict]]:
    """The requests that arrived between a question's start and the next's: those for its final
    words (the real turn, in order) and the others (replies prepared at a pause for earlier
    words, and fills). With `heard` (her turn's words) the real turn is the requests for them,
    whenever they came, and the others those before it."""
    if heard is not None:
        turn = [r for r in records if not is_fill(r) and r["at"] >= began and r["last_user"] == heard[:80]]
        end = turn[0]["at"] if turn else until
        return turn, [r for r in records if began <= r["at"] < end and r not in turn]
    mine = [r for r in records if began <= r["at"] < until]
    real = [r for r in mine if not is_fill(r)]
    final = real[-1]["last_user"] if real else None
    turn = [r for r in real if r["last_user"] == final]
    return turn, [r for r in mine if r not in turn]


async def conversation(args, url: str, folder: Path, engines) -> dict:
    transcriber, synthesizer = engines
    proxy = Proxy(url, unstable_prefix=args.unstable_prefix)
    questions = (LONG_QUESTIONS if args.long else QUESTIONS)[:args.turns]
    config = make_config(folder, proxy.url, personality=ROOT / "personality" / "default.md",
                         brain={"model": args.model, "read_timeout_s": 120.0, "max_tokens_spoken": SPOKEN_CAP,
                                "fill_while_speaking": not args.no_fill})
    bus = EventBus()
    face: list[tuple[float, bool]] = []
    playing: list[tuple[float, bool]] = []
    tools: list[tuple[float, str, dict]] = []
    bus.subscribe(lambda e: face.append((time.monotonic(), str(e.state) in ANSWERING))
                  if isinstance(e, StateChanged) else None)
    bus.subscribe(lambda e: playing.append((time.monotonic(), e.speaking))
                  if isinstance(e, SpeakingChanged) else None)
    bus.subscribe(lambda e: tools.append((time.monotonic(), e.name, e.arguments))
                  if isinstance(e, ToolStarted) else None)
    companion = Companion(config, bus)
    await companion.start()  # her warm-up request reaches the server now
    user = TimedSpeaker([espeak(q, folder) for q in questions])
    wall = time.monotonic()
    sink = WavSink(lambda: time.monotonic() - wall, rate=synthesizer.sample_rate, realtime=True)
    session = VoiceSession(brain=CompanionBrain(companion), bus=bus, source=user, sink=sink,
                           transcriber=transcriber, synthesizer=synthesizer,
                           voice=VoiceSettings(listening="always", hearing_model=args.hearing))
    early = install_early_words(session.loop)  # the ear's words so far reach her preparer (brain/fill.py)
    lines: list[tuple[float, str, str]] = []
    mouth_playing = session.speaker.on_playing

    def on_playing(line) -> None:
        lines.append((time.monotonic(), str(line.kind), line.text))
        mouth_playing(line)

    session.speaker.on_playing = on_playing
    session.loop.on_busy.append(user.busy)
    user.heard = session.loop.heard
    quiet_at: list[float] = []
    session.loop.on_busy.append(lambda busy: None if busy else quiet_at.append(time.monotonic()))
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
        proxy.close()
    end_all = time.monotonic()
    records = proxy.records
    report = []
    for index, ended in enumerate(user.ends):
        began = user.starts[index]
        until = user.starts[index + 1] if index + 1 < len(user.starts) else end_all
        words = session.loop.heard[index] if index < len(session.loop.heard) else None
        turn, others = turn_requests(records, began, until, words)
        quiet = next((t for t in quiet_at if ended < t < until), until)  # she went quiet
        said = [(t, kind, text) for t, kind, text in lines if ended <= t < until]
        answer = next((t for t, kind, _text in said if kind == "say"), None)
        first = said[0][0] if said else None
        evaluated = [row["prompt_n"] for row in map(request_row, turn) if row["prompt_n"] is not None]
        turn_fills = [r for r in others if is_fill(r)]
        so_far = [(t, sent) for t, _words, sent in early.words if began <= t < until]
        before_real = [r for r in turn_fills if turn and r["at"] < turn[0]["at"]]
        report.append({
            "question": questions[index],
            "words": len(questions[index].split()),
            "words_so_far": len(so_far),
            "words_so_far_filled": sum(1 for _t, sent in so_far if sent),
            "fills": len(turn_fills),
            "fill_prompt_n": sum((r.get("timings") or {}).get("prompt_n") or 0 for r in turn_fills),
            "fills_sent_ms_after_end": [round((r["at"] - ended) * 1000) for r in turn_fills],
            "fill_hung_up": sum(1 for r in turn_fills if "client_hung_up_ms" in r
                                and (r["ttft_ms"] is None or r["client_hung_up_ms"] < r["ttft_ms"])),
            "fill_prompt_done": sum(1 for r in turn_fills if r["ttft_ms"] is not None),
            "fill_last_ms_before_end": round((ended - before_real[-1]["at"]) * 1000) if before_real else None,
            "prepared_for_earlier_words": sum(1 for r in others if not is_fill(r)),
            "request_after_end_ms": round((turn[0]["at"] - ended) * 1000) if turn else None,
            "heard": session.loop.heard[index] if index < len(session.loop.heard) else None,
            "prompt_n": evaluated[0] if evaluated else None,
            "max_prompt_n": max(evaluated) if evaluated else None,
            "cache_n": (turn[0].get("timings") or {}).get("cache_n") if turn else None,
            "server_ttft_ms": turn[0]["ttft_ms"] if turn else None,
            "first_sound_ms": round((first - ended) * 1000) if first else None,
            "answer_first_sound_ms": round((answer - ended) * 1000) if answer else None,
            "tools_called": [name for t, name, _a in tools if began <= t < until],
            "longest_silence_ms": round(longest_gap(
                ended, quiet, spans(since(playing, ended), quiet) + spans(since(face, ended), quiet)) * 1000),
            "requests": [request_row(r) for r in turn],
            "other_requests": [request_row(r) for r in others],
        })
    later = [t["max_prompt_n"] for t in report[1:] if t["max_prompt_n"] is not None]
    sounds = [t["first_sound_ms"] for t in report[1:] if t["first_sound_ms"] is not None]
    return {
        "turns": report,
        "warm_up": [request_row(r) for r in records if r["at"] < (user.starts[0] if user.starts else end_all)],
        "max_prompt_n_turns_2_on": max(later) if later else None,
        "median_first_sound_ms_turns_2_on": round(statistics.median(sounds)) if sounds else None,
    }


async def main_async(args) -> dict:
    model = MODELS[args.model]
    if not args.upstream:
        install_models()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        engines = await load_engines(VoiceSettings(listening="always", hearing_model=args.hearing),
                                     make_config(folder, "http://127.0.0.1:9/v1").paths.models_dir)
        load_before = os.getloadavg()[0]
        if args.upstream:
            result = await conversation(args, args.upstream, folder, engines)
        else:
            with llama_server(model, threads=args.threads, log=folder / "server.log") as url:
                result = await conversation(args, url, folder, engines)
    return {
        "model": model.name, "threads": args.threads, "unstable_prefix": args.unstable_prefix,
        "long_questions": args.long, "fill_while_speaking": not args.no_fill, "hearing_model": args.hearing or "whisper",
        "spoken_cap_tokens": SPOKEN_CAP, "sound_path": "in-process real-time voice session (laptop_brain.py's)",
        **result,
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2-135m")
    parser.add_argument("--unstable-prefix", action="store_true")
    parser.add_argument("--long", action="store_true", help="25-34-word questions (LONG_QUESTIONS)")
    parser.add_argument("--no-fill", action="store_true", help="brain.fill_while_speaking off")
    parser.add_argument("--hearing", default="", help="voice.hearing_model (moonshine-base-en: partials while you talk)")
    parser.add_argument("--turns", type=int, default=len(QUESTIONS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--upstream", help="an already running OpenAI-compatible server (…/v1) instead")
    args = parser.parse_args()
    args.turns = max(1, min(args.turns, len(QUESTIONS)))
    print(json.dumps(asyncio.run(main_async(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
