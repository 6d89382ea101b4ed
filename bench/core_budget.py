"""Her two cores, per component: CPU seconds each part of the voice pipeline uses per second of
a spoken conversation, and per turn.

A private PulseAudio carries a few spoken turns (espeak-ng voices and piper, two of them long
enough for Moonshine's partial transcripts) into her virtual microphone; she runs at the
default settings with the real models, the real devices and the echo canceller, and answers
through the scripted brain on loopback at once. The wake-word detector is fed every frame as
When called runs it (its detections ignored, so every question is answered; --no-wake leaves
it out). CPU time is read per thread from /proc/self/task/<tid>/stat (model threads carry
their name to the OS, and the threads their runtimes start inherit it), and split further
with time.thread_time() inside the calls that share a thread: the VAD and the endpointer on
the event loop, Moonshine's partial transcripts on its model thread. CPU time is what her
threads used, so other work on this shared machine slows them without inflating it much; the
1-minute load average is printed beside every run. --hog keeps one core busy throughout.

    .venv/bin/python bench/core_budget.py [--hearing-model whisper moonshine-base-en] [--hog]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from audio_env import PrivatePulseAudio, sound_server  # noqa: E402
from brain_harness import make_config  # noqa: E402
from e2e_support import Stage  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402
from turn_taking import REPLY, build_input  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.events import EventBus  # noqa: E402
from companion.runtime import Companion  # noqa: E402
from companion.voice.brain_port import CompanionBrain  # noqa: E402
from companion.voice.factory import (  # noqa: E402
    VoiceParts,
    load_engines,
    load_turn_model_or_none,
    make_vad,
    open_devices,
)
from companion.voice.session import VoiceSession  # noqa: E402
from companion.voice.speaking.tts import PiperSynthesizer  # noqa: E402
from companion.voice.turns.endpoint import Endpointer  # noqa: E402

TURNS = [
    ("What time is it in Tokyo?", "en-us"),
    ("I would like to book a table for four people at the Italian restaurant on Friday evening.", "piper@1.0"),
    ("How long does it take to boil an egg?", "en-gb-scotland"),
    ("Could you tell me how long it takes to drive from Manchester to Edinburgh when the motorway is busy?",
     "en-gb"),
    ("Please remind me to water the plants.", "en-029"),
    ("What is the tallest mountain in Africa?", "en-us+f2"),
]
WAKE_WORD = "okay_nabu"
"""The default wake word (voice.wake_word)."""
ENGINES = {"whisper": "", "moonshine-base-en": "moonshine-base-en"}
BUDGETS = {
    # CPU seconds per second of conversation (a share of one core), about twice what was
    # measured on 2026-12-02 (bench/RESULTS.md); docs/voice-pipeline.md, "Her two cores", has the table.
    "echo_canceller": 0.05, "vad": 0.02, "endpointer": 0.002, "event_loop_rest": 0.02,
    "audio_callbacks_and_native": 0.05, "wake_word": 0.02, "recogniser_final": 0.04,
    "recogniser_partial": 0.10, "turn_model": 0.03, "piper": 0.08,
}
PER_CALL_BUDGETS_MS = {"vad_frame": 1.0, "turn_model": 100.0, "recogniser_partial": 150.0, "piper_synthesis": 300.0}


def thread_cpu() -> dict[int, tuple[str, float]]:
    """{tid: (the OS's name for it, CPU seconds so far)} for every thread of this process."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # it ended while we looked
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "; utime, stime are fields 14, 15
        out[int(tid)] = (stat[stat.index("(") + 1:stat.rindex(")")], (int(fields[11]) + int(fields[12])) / tick)
    return out


def process_cpu() -> float:
    """CPU seconds of the whole process, threads that have ended included."""
    times = os.times()
    return times.user + times.system


class Stopwatch:
    """CPU seconds (time.thread_time) spent inside wrapped calls, on whichever thread runs them."""

    def __init__(self) -> None:
        self.cpu_s: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._depth = threading.local()

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu_s[name] += time.thread_time() - started
                self.calls[name] += 1
        return timed

    def reset(self) -> None:
        self.cpu_s.clear()
        self.calls.clear()


COMPONENTS = {"whisper": "recogniser", "moonshine": "recogniser", "smart-turn": "turn_model", "piper": "piper"}


def component_of(comm: str, python_name: str | None, unnamed: str) -> str:
    """Which part of her a thread works for, from its OS name and its Python name."""
    if comm in COMPONENTS:
        return COMPONENTS[comm]
    if python_name == "echo-canceller":
        return "echo_canceller"
    if python_name is not None and python_name.startswith("wake-word"):
        return "wake_word"
    if python_name == "MainThread":
        return "event_loop"
    if python_name is not None:
        return "harness_and_executor"  # the scripted brain's server, asyncio's default executor
    return "audio_callbacks_and_native" if comm == unnamed else f"native:{comm}"


def cpu_by_component(before: dict, after: dict, names: dict[int, str]) -> dict[str, float]:
    unnamed = after[threading.main_thread().native_id][0]
    used: dict[str, float] = defaultdict(float)
    for tid, (comm, cpu) in after.items():
        used[component_of(comm, names.get(tid), unnamed)] += cpu - before.get(tid, (comm, 0.0))[1]
    return dict(used)


async def tick(late: list[float], watch: Stopwatch, every_s: float = 0.02) -> None:
    """How late the event loop wakes a task that sleeps `every_s` (is the loop itself busy?);
    its own CPU time is the harness's, not the loop's."""
    while True:
        due = time.monotonic() + every_s
        await asyncio.sleep(every_s)
        started = time.thread_time()
        late.append(max(0.0, time.monotonic() - due))
        watch.cpu_s["ticker"] += time.thread_time() - started


def ms(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(np.array(values), q)) * 1000, 1) if values else None


async def converse(folder: Path, pulse: PrivatePulseAudio, wav: Path, models, *, wake: bool, ticks: bool) -> dict:
    """One spoken conversation over the real devices, with per-thread CPU read around it."""
    transcriber, synthesizer, turn_model = models
    watch = Stopwatch()
    moonshine = hasattr(transcriber, "_partial_sync")
    if moonshine:  # partial and final transcripts share one thread: time them inside it
        transcriber._partial_sync = watch.wrap("recogniser_partial", transcriber._partial_sync)
    turn_model.guess_sync = watch.wrap("turn_model", turn_model.guess_sync)
    push = Endpointer.push
    Endpointer.push = watch.wrap("endpointer", push)
    with ScriptedBrain(fallback={"text": REPLY}) as brain:
        companion = Companion(make_config(folder, brain.url), EventBus())
        await companion.start()
        voice = VoiceSettings(listening="always")  # every question answered (they don't say her name)
        source, sink, notices, echo = await open_devices(voice, sample_rate=synthesizer.sample_rate)
        assert not notices, notices
        vad = make_vad()
        vad.probability = watch.wrap("vad", vad.probability)
        parts = VoiceParts(vad=vad, transcriber=transcriber, synthesizer=synthesizer, source=source, sink=sink,
                           listening=True, turn_model=turn_model, echo=echo)
        session = VoiceSession.from_parts(parts, brain=CompanionBrain(companion), bus=companion.bus, voice=voice)
        ear = session.loop.ear
        lateness: list[float] = []
        heard_frame = ear.partial_pacer.frame_heard

        def frame_heard(stream_s: float, timeline=None) -> None:
            heard_frame(stream_s, timeline)
            lateness.append(ear.partial_pacer.late_by_s)

        ear.partial_pacer.frame_heard = frame_heard
        partial_wall: list[float] = []
        partial_done = ear.partial_pacer.partial_done

        def partial_answered() -> None:
            partial_done()
            partial_wall.append(ear.partial_pacer.last_took_s)

        ear.partial_pacer.partial_done = partial_answered
        detector = None
        if wake:
            from companion.voice.addressing.wake import WakeWordThread

            detector = WakeWordThread(WAKE_WORD, lambda _stream_s, _score: None)
            ear.hearers.append(detector.feed)
        running = asyncio.ensure_future(session.run())
        late_wakes: list[float] = []
        # (the ticker's own wake-ups cost the loop ~1 % of a core: only when asked for)
        ticker = asyncio.ensure_future(tick(late_wakes, watch)) if ticks else None
        try:
            await session.cache.ready.wait()  # her narration lines, synthesized once at start
            await asyncio.sleep(1.5)  # PortAudio's first callbacks (no event to wait on)
            lateness.clear()
            late_wakes.clear()
            partial_wall.clear()
            watch.reset()
            pacer = ear.partial_pacer
            counted = (pacer.started, pacer.held_late, pacer.held_slow)
            syntheses = synthesizer.synth_count
            names = {t.native_id: t.name for t in threading.enumerate()}
            before, process_before, wall = thread_cpu(), process_cpu(), time.monotonic()
            player = Stage(pulse).say(wav)
            await asyncio.to_thread(player.wait)
            await asyncio.sleep(1.0)
            after, process_after = thread_cpu(), process_cpu()
            elapsed = time.monotonic() - wall
            names.update({t.native_id: t.name for t in threading.enumerate()})
            held = {"started": pacer.started - counted[0], "held_late_frames": pacer.held_late - counted[1],
                    "held_slow_frames": pacer.held_slow - counted[2],
                    "wall_ms_median": ms(partial_wall, 50), "wall_ms_p95": ms(partial_wall, 95)}
        finally:
            if ticker is not None:
                ticker.cancel()
            Endpointer.push = push
            if detector is not None:
                detector.close()
            await session.close()
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await companion.close()
    used = cpu_by_component(before, after, names)
    # (never below 0: /proc counts each thread in 10 ms ticks, the process total more finely)
    used["threads_that_ended"] = max(0.0, (process_after - process_before) - sum(used.values()))
    loop = session.loop
    return {"elapsed_s": elapsed, "used": used, "watch": watch, "syntheses": synthesizer.synth_count - syntheses,
            "turns": len(loop.latencies), "heard": list(loop.heard), "lateness": lateness, "partials": held,
            "latencies": loop.latencies, "requests": len(brain.requests), "moonshine": moonshine,
            "ticks": late_wakes if ticks else None}


def report(seen: dict) -> dict:
    used, watch, elapsed = seen["used"], seen["watch"], seen["elapsed_s"]
    turns = max(1, seen["turns"])
    split = dict(used)
    # The event loop's share: the VAD and the endpointer timed inside it, the rest (the ear's
    # other bookkeeping, the voice loop, the brain client, the speaker's scheduling) left over.
    split["vad"] = watch.cpu_s["vad"]
    split["endpointer"] = watch.cpu_s["endpointer"]
    split["event_loop_rest"] = used.get("event_loop", 0.0) - split["vad"] - split["endpointer"] - watch.cpu_s["ticker"]
    split["harness_and_executor"] = split.get("harness_and_executor", 0.0) + watch.cpu_s["ticker"]
    split.pop("event_loop", None)
    if seen["moonshine"]:
        split["recogniser_partial"] = watch.cpu_s["recogniser_partial"]
        split["recogniser_final"] = used.get("recogniser", 0.0) - split["recogniser_partial"]
    else:
        split["recogniser_final"] = used.get("recogniser", 0.0)
    split.pop("recogniser", None)
    components = {
        name: {"cpu_s": round(cpu, 3), "cpu_s_per_s": round(cpu / elapsed, 4), "cpu_ms_per_turn": round(cpu / turns * 1000, 1)}
        for name, cpu in sorted(split.items(), key=lambda item: -item[1])
    }
    total = sum(split.values())
    stages = [t.stages_ms() for t in seen["latencies"]]
    transcription = [s["transcription"] for s in stages if s["transcription"] is not None]
    waits = [s["end_of_speech_wait"] for s in stages if s["end_of_speech_wait"] is not None]
    lateness = seen["lateness"]
    calls = watch.calls
    per_call = {
        "turn_model": round(watch.cpu_s["turn_model"] / max(1, calls["turn_model"]) * 1000, 1),
        "recogniser_partial": round(watch.cpu_s["recogniser_partial"] / max(1, calls["recogniser_partial"]) * 1000, 1)
        if calls["recogniser_partial"] else None,
        "vad_frame": round(watch.cpu_s["vad"] / max(1, calls["vad"]) * 1000, 3),
        "piper_synthesis": round(used.get("piper", 0.0) / max(1, seen["syntheses"]) * 1000, 1),
    }
    over = [name for name, budget in BUDGETS.items() if name in components and components[name]["cpu_s_per_s"] > budget]
    over += [f"{name} per call" for name, budget in PER_CALL_BUDGETS_MS.items()
             if per_call.get(name) is not None and per_call[name] > budget]
    return {
        "conversation_s": round(elapsed, 1),
        "turns": seen["turns"],
        "heard": seen["heard"],
        "process_cpu_s_per_s": round(total / elapsed, 3),
        "components": components,
        "calls": {"turn_model": calls["turn_model"], "recogniser_partial": calls["recogniser_partial"],
                  "piper_syntheses": seen["syntheses"], "vad_frames": calls["vad"]},
        "per_call_cpu_ms": per_call,
        "over_budget": over,
        "partials": seen["partials"],
        "ear_late_ms": {"median": ms(lateness, 50), "p95": ms(lateness, 95), "p99": ms(lateness, 99),
                        "max": ms(lateness, 100), "frames": len(lateness)},
        "loop_wakes_late_ms": {"median": ms(seen["ticks"], 50), "p99": ms(seen["ticks"], 99),
                               "max": ms(seen["ticks"], 100)} if seen["ticks"] is not None else None,
        "end_of_turn_ms": {
            "end_of_speech_wait_median": round(statistics.median(waits), 1) if waits else None,
            "transcription_after_turn_end_median": round(statistics.median(transcription), 1) if transcription else None,
            "early_transcript_ready": sum(t.early_transcript_ready for t in seen["latencies"]),
        },
    }


async def measure(engines: list[str], *, hog: bool, wake: bool, ticks: bool = False) -> dict:
    results: dict = {"cores": os.cpu_count(), "hog": hog, "wake_word": WAKE_WORD if wake else None,
                     "budgets_cpu_s_per_s": BUDGETS, "budgets_per_call_ms": PER_CALL_BUDGETS_MS}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with sound_server(folder / "pulse") as pulse:
            stage = Stage(pulse).start()
            try:
                for engine in engines:
                    transcriber, synthesizer = await load_engines(VoiceSettings(hearing_model=ENGINES[engine]),
                                                                  folder / "models")
                    turn_model = await load_turn_model_or_none()
                    if turn_model is None:
                        raise SystemExit("the turn model is not installed (make)")
                    piper = PiperSynthesizer(synthesizer.model_info)
                    piper.load()
                    run = folder / engine
                    run.mkdir()
                    wav = build_input(run, TURNS, piper)
                    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if hog else None
                    try:
                        load_before, started = os.getloadavg()[0], time.strftime("%H:%M:%S", time.gmtime())
                        seen = await converse(run, pulse, wav, (transcriber, synthesizer, turn_model), wake=wake,
                                              ticks=ticks)
                    finally:
                        if spinner is not None:
                            spinner.kill()
                            spinner.wait()
                    results[engine] = {"started_utc": started,
                                       "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                                       **report(seen)}
            finally:
                stage.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hearing-model", nargs="+", choices=sorted(ENGINES), default=sorted(ENGINES, reverse=True))
    parser.add_argument("--hog", action="store_true", help="keep one core busy (a spinning process) throughout")
    parser.add_argument("--no-wake", action="store_true", help="leave the wake-word detector out")
    parser.add_argument("--loop-ticks", action="store_true",
                        help="also measure how late the event loop wakes a task every 20 ms (costs ~1 %% of a core)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.hearing_model, hog=args.hog, wake=not args.no_wake,
                                         ticks=args.loop_ticks))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
