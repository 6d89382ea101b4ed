"""Brain turn-loop overhead against the scripted brain (real HTTP + SSE on loopback); prints JSON.

Measures: time from ask() to her first streamed words, to the ANNOUNCE of a tool call and to
the end of a one-tool turn; the reply filter's throughput; and the cold start of
`companion chat --once` (process start to exit). The history grows to its 60-message cap
during the run, so the numbers include the cost of sending a full history each round.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from brain_harness import make_config, registry_with, start_companion, tool  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

from companion.brain.emotion import ReplyFilter  # noqa: E402
from companion.events import ReplyDelta, Speak, SpeechKind  # noqa: E402

TURNS = 30


def ms(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {"median_ms": round(statistics.median(values) * 1000, 2),
            "p90_ms": round(values[int(len(values) * 0.9) - 1] * 1000, 2)}


async def turn_latency(tmp: Path) -> dict[str, object]:
    with ScriptedBrain() as brain:
        config = make_config(tmp, brain.url)
        companion, rec = await start_companion(config, registry_with(tool("echo")))
        first_words, announce, whole = [], [], []
        for _ in range(TURNS):
            brain.push({"text": "[happy] Hello there, this is a reply in a few chunks.", "chunks": 6})
            rec.events.clear()
            start = time.perf_counter()
            task = asyncio.ensure_future(companion.ask("hi"))
            await rec.wait_for(lambda: bool(rec.of(ReplyDelta)))
            first_words.append(time.perf_counter() - start)
            await task
        for _ in range(TURNS):
            brain.push({"tool_calls": [{"name": "echo", "arguments": {"x": 1}}]}, {"text": "Done."})
            rec.events.clear()
            start = time.perf_counter()
            task = asyncio.ensure_future(companion.ask("echo"))
            await rec.wait_for(lambda: any(e.kind == SpeechKind.ANNOUNCE for e in rec.of(Speak)))
            announce.append(time.perf_counter() - start)
            await task
            whole.append(time.perf_counter() - start)
        await companion.close()
    return {"ask_to_first_words": ms(first_words), "ask_to_announce": ms(announce),
            "one_tool_turn": ms(whole), "turns": TURNS}


def filter_throughput() -> dict[str, float]:
    text = ("[happy] " + "Some words and <think>hidden reasoning</think> more words. " * 2000)
    pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
    start = time.perf_counter()
    reply = ReplyFilter()
    for piece in pieces:
        reply.feed(piece)
    reply.finish()
    elapsed = time.perf_counter() - start
    return {"chars_per_s": round(len(text) / elapsed), "chunk_chars": 7}


def chat_cold_start(tmp: Path) -> dict[str, float]:
    with ScriptedBrain(fallback={"text": "[happy] Hi."}) as brain:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "companion.cli", "chat", "--once", "hi", "--brain-url", brain.url,
                 "--config-dir", str(tmp / "cfg"), "--workspace", str(tmp / "ws")],
                check=True, capture_output=True, timeout=120,
            )
            times.append(time.perf_counter() - start)
    return {"median_s": round(statistics.median(times), 2)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        result = {
            "turn": asyncio.run(turn_latency(Path(tmp))),
            "reply_filter": filter_throughput(),
            "chat_once_cold_start": chat_cold_start(Path(tmp)),
        }
    print(json.dumps({"brain_turn": result}))


if __name__ == "__main__":
    main()
