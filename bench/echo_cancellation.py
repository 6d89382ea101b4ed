"""Echo cancellation on open speakers: self-interruptions, barge-in stop time, ERLE, CPU.

Her voice session runs as `companion voice` does, on a private PulseAudio whose speaker is
looped back into the microphone 60 ms later (tests/helpers/open_speakers.Room), with her echo at
-6 dB and at 0 dB. At each level she gives ROUNDS medium replies nobody interrupts (did she
stop or hear herself? how much echo did the canceller remove?) and ROUNDS replies the user
talks over 2 s in (time from the user's first sound to her last, on the witness recording;
were the user's words heard?). CPU per 10 ms frame is measured twice: inside the live
session's canceller thread, and offline on a minute of a simulated room with no other load.
Prints one JSON object; the machine's load average is in it, since the machine is shared.
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

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from audio_env import sound_server  # noqa: E402
from e2e_support import words  # noqa: E402
from open_speaker_talk import LONG_REPLY, OpenSpeakerTalk, she_finished, stop_latency_s  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

from companion.voice.hearing.stt import WhisperTranscriber  # noqa: E402
from companion.voice.models.files import resolve_hearing_model, resolve_voice  # noqa: E402
from companion.voice.sound.audio import resample  # noqa: E402
from companion.voice.sound.echo_canceller import EchoCanceller, EchoSettings, db  # noqa: E402
from companion.voice.speaking.tts import PiperSynthesizer  # noqa: E402

ROUNDS = 10
MEDIUM_REPLY = " ".join(LONG_REPLY.split(". ")[:3]) + "."
LAST_SENTENCE = LONG_REPLY.split(". ")[2] + "."


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def erle_db(before, after) -> float | None:
    raw = after.raw_energy - before.raw_energy
    clean = after.clean_energy - before.clean_energy
    return round(db(raw / clean), 1) if clean > 0 and raw > 0 else None


async def level(folder: Path, pulse, synthesizer, hearing, echo_db: int, rounds: int) -> dict:
    self_interruptions, erles, stops, heard_ok, problems = 0, [], [], 0, []
    # Whatever her echo makes her ask is answered too, so a bad round cannot stall the rest.
    with ScriptedBrain(fallback={"text": "Okay."}) as brain:
        async with OpenSpeakerTalk(folder, pulse, brain.url, synthesizer, hearing, echo_db=echo_db) as talk:
            for _ in range(rounds):
                brain.push({"text": MEDIUM_REPLY})
                try:
                    exchange = await talk.ask()
                except TimeoutError:
                    self_interruptions += 1
                    problems.append("a reply never finished (her echo started turns of its own)")
                    continue
                wrong = she_finished(exchange, hearing, LAST_SENTENCE)
                self_interruptions += bool(wrong)
                problems += wrong
                if (erle := erle_db(exchange.echo_before, exchange.echo_after)) is not None:
                    erles.append(erle)
            for _ in range(rounds):
                brain.push({"text": MEDIUM_REPLY}, {"text": "Okay, I will stop."})
                try:
                    exchange = await talk.ask(interrupt_after_s=2.0)
                except TimeoutError:
                    problems.append("an interrupted reply never finished")
                    continue
                try:
                    stops.append(stop_latency_s(exchange) * 1000)
                except (ValueError, IndexError):
                    problems.append("the interruption round did not show the user's speech and hers")
                lines = exchange.heard_lines
                heard_ok += len(lines) == 2 and "stop" in words(lines[1])
            cpu = talk.session.echo.stats()
    return {
        "echo_db": echo_db,
        "replies": rounds,
        "self_interruptions": self_interruptions,
        "erle_db": {"median": statistics.median(erles), "min": min(erles)} if erles else None,
        "barge_in_stop_ms": {"median": round(statistics.median(stops)), "p95": round(percentile(stops, 95)),
                             "max": round(max(stops))} if stops else None,
        "interruptions_heard": f"{heard_ok}/{rounds}",
        "live_ms_per_10ms_frame": round(cpu.ms_per_frame, 3),
        "problems": problems[:5],
    }


def offline_cpu(synthesizer) -> dict:
    """A minute of her voice through a simulated room (60 ms, -6 dB), one frame at a time."""
    far = resample(synthesizer.synthesize_sync(LONG_REPLY), synthesizer.sample_rate, 16_000)
    far = np.tile(far, int(np.ceil(60 * 16_000 / far.size)))[:60 * 16_000]
    near = np.zeros_like(far)
    near[960:] = 0.5 * far[:-960]
    canceller = EchoCanceller(EchoSettings())
    wall, cpu = [], []
    for i in range(0, far.size - 160, 160):
        t, c = time.perf_counter(), time.thread_time()
        canceller.render(far[i:i + 160], 16_000, 100.0 + i / 16_000)
        canceller.capture(near[i:i + 160], 16_000, 100.0 + i / 16_000)
        wall.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
    return {"frames": len(wall), "wall_ms_median": round(statistics.median(wall), 3),
            "wall_ms_p95": round(percentile(wall, 95), 3), "cpu_ms_mean": round(statistics.mean(cpu), 3),
            "target_ms": 1.0}


async def measure(rounds: int, levels: list[int]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with sound_server(folder / "pulse") as pulse:
            synthesizer = PiperSynthesizer(resolve_voice("", folder / "models"), steady=True)
            synthesizer.load()
            hearing = WhisperTranscriber(resolve_hearing_model("", folder / "models"))
            hearing.load()
            load_before = os.getloadavg()[0]
            results = {"offline_cpu_per_10ms_frame": offline_cpu(synthesizer)}
            for echo_db in levels:
                where = folder / f"echo{echo_db}"
                where.mkdir()
                results[f"echo_{'minus' if echo_db < 0 else ''}{abs(echo_db)}db"] = await level(
                    where, pulse, synthesizer, hearing, echo_db, rounds)
            results["load_average_1min"] = {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)}
            results["measured_utc"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
            results["targets"] = {"self_interruptions": 0, "stop_median_ms": 500, "stop_p95_ms": 800,
                                  "cpu_ms_per_10ms_frame": 1.0}
            return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="replies of each kind per echo level")
    parser.add_argument("--echo-db", type=int, nargs="+", default=[-6, 0], choices=[-6, 0])
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.rounds, args.echo_db))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
