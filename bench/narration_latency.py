"""Narration latency: a tool call → the first sample of her ANNOUNCE line leaving for the speaker.

A scripted brain calls a tool on each of 12 voice turns; the announce line comes from the
narration cache and plays on a real output stream (a private PulseAudio null sink, when
pulseaudio is installed) or else a real-time WAV sink. The same is then measured with the
cache switched off, to show what pre-synthesis saves. Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from audio_env import PrivatePulseAudio  # noqa: E402
from brain_harness import make_config, tool  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.events import EventBus, Speak, SpeechKind  # noqa: E402
from companion.runtime import Companion  # noqa: E402
from companion.tools.context import Channel  # noqa: E402
from companion.tools.registry import Registry  # noqa: E402
from companion.voice.brain_port import CompanionBrain  # noqa: E402
from companion.voice.factory import load_engines  # noqa: E402
from companion.voice.session import VoiceSession  # noqa: E402
from companion.voice.sound.audio import NullSource, WavSink  # noqa: E402

TURNS = 12


async def lookup(args: dict, ctx) -> str:
    await asyncio.sleep(0.2)
    return "The answer is 42."


async def run_turns(companion, session, announced: list[float], first_samples: list[float]) -> list[float]:
    delays = []
    for _ in range(TURNS):
        announced.clear()
        first_samples.clear()
        await companion.ask("Look it up, please.", Channel.VOICE)
        await session.loop.wait_until_quiet()
        # The first sample that left after the announce line was queued is the announce line's.
        after = [t for t in first_samples if t >= announced[0]]
        delays.append((after[0] - announced[0]) * 1000)
    return delays


async def measure(folder: Path, device: bool) -> dict:
    spec = tool("look_up", lookup, announce="Let me look that up for you.", complete="Found it.")
    registry = Registry()
    registry.register(spec)
    script = [{"tool_calls": [{"name": "look_up", "arguments": {}}]}, {"text": "It is 42."}] * (2 * TURNS)
    with ScriptedBrain(script) as brain:
        config = make_config(folder, brain.url)
        transcriber, synthesizer = await load_engines(VoiceSettings(), config.paths.models_dir)
        bus = EventBus()
        companion = Companion(config, bus, registry=registry)
        await companion.start()
        if device:
            from companion.voice.sound.devices import DeviceSink

            sink = DeviceSink(preferred_rate=synthesizer.sample_rate)
        else:
            wall = time.monotonic()
            sink = WavSink(lambda: time.monotonic() - wall, rate=synthesizer.sample_rate, realtime=True)
        session = VoiceSession(brain=CompanionBrain(companion), bus=bus, source=NullSource(), sink=sink,
                               transcriber=transcriber, synthesizer=synthesizer,
                               voice=VoiceSettings(listening="always"))
        announced: list[float] = []
        first_samples: list[float] = []
        bus.subscribe(lambda e: announced.append(time.monotonic())
                      if isinstance(e, Speak) and e.kind is SpeechKind.ANNOUNCE else None)
        sink.add_start_listener(first_samples.append)
        running = asyncio.create_task(session.run())
        session.refresh_narration()
        await session.cache.ready.wait()
        # Warm the output stream once so the first measured turn is not its start-up.
        await sink.play(np.zeros(2205, dtype=np.float32), synthesizer.sample_rate)
        cached = await run_turns(companion, session, announced, first_samples)
        session.speaker.cache = None  # every line synthesized when it is said
        uncached = await run_turns(companion, session, announced, first_samples)
        await session.close()
        await running
        await companion.close()
    return {
        "turns": TURNS,
        "sink": "PulseAudio null sink via sounddevice" if device else "real-time WAV sink",
        "cached_ms": {"median": round(statistics.median(cached), 1), "p95": round(float(np.percentile(cached, 95)), 1),
                      "max": round(max(cached), 1)},
        "uncached_ms": {"median": round(statistics.median(uncached), 1),
                        "p95": round(float(np.percentile(uncached, 95)), 1)},
        "target_ms": 50,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pulse = None
        if shutil.which("pulseaudio"):
            pulse = PrivatePulseAudio(folder / "pulse").start()
            os.environ.update(pulse.env)  # before sounddevice initialises PortAudio
        try:
            result = asyncio.run(measure(folder, device=pulse is not None))
        finally:
            if pulse is not None:
                pulse.stop()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
