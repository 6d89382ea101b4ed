"""Voice latency: end of speech → her first reply audio, over 12 utterances, with the real models.

The utterances (espeak-ng, a voice unlike hers) are paced in real time into the voice loop; a
scripted brain answers at once over real HTTP/SSE; her speech goes to a real-time WAV sink.
End of speech is measured from the audio itself (last sample above -40 dBFS), not from the VAD.
Prints one JSON object: median and p95 of the total, the stage breakdown, peak memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from brain_harness import make_config  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.events import EventBus  # noqa: E402
from companion.runtime import Companion  # noqa: E402
from companion.voice.brain_port import CompanionBrain  # noqa: E402
from companion.voice.factory import load_engines  # noqa: E402
from companion.voice.session import VoiceSession  # noqa: E402
from companion.voice.sound.audio import WavSink, WavSource, read_wav, resample, write_wav  # noqa: E402
from companion.voice.turns.endpoint import FALLBACK_SILENCE_MS  # noqa: E402

UTTERANCES = [
    "What time is it?",
    "How is the weather today?",
    "Tell me a joke.",
    "What is the capital of France?",
    "Remind me to buy milk.",
    "Can you help me write an email?",
    "How far away is the moon?",
    "Play some relaxing music.",
    "What should I cook for dinner?",
    "Who wrote Romeo and Juliet?",
    "Set a timer for ten minutes.",
    "Thank you, that was helpful.",
]
REPLY = "Sure, I can help with that."
GAP_S = 4.0


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def build_input(folder: Path) -> tuple[Path, list[float]]:
    """One WAV with every utterance and GAP_S of silence after each; returns speech-end offsets."""
    pieces, ends, position = [np.zeros(8_000, dtype=np.float32)], [], 0.5
    for index, text in enumerate(UTTERANCES):
        wav = folder / f"u{index}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(wav), text], check=True)
        audio, rate = read_wav(wav)
        audio = resample(audio, rate, 16_000)
        loud = np.flatnonzero(np.abs(audio) > 0.01)
        ends.append(position + (loud[-1] + 1) / 16_000)
        pieces += [audio, np.zeros(int(GAP_S * 16_000), dtype=np.float32)]
        position += audio.size / 16_000 + GAP_S
    path = folder / "utterances.wav"
    write_wav(path, np.concatenate(pieces), 16_000)
    return path, ends


async def measure(silence_ms: int, engines=None) -> dict:
    """`engines(voice, models_dir)` gives (transcriber, synthesizer); the local models by default."""
    with tempfile.TemporaryDirectory() as tmp, ScriptedBrain(fallback={"text": REPLY}) as brain:
        folder = Path(tmp)
        wav, ends = build_input(folder)
        voice = replace(VoiceSettings(listening="always"), end_of_turn_silence_ms=silence_ms)  # no name said
        config = make_config(folder, brain.url, voice={"end_of_turn_silence_ms": silence_ms})
        started = time.monotonic()
        transcriber, synthesizer = await (engines or load_engines)(voice, config.paths.models_dir)
        load_s = time.monotonic() - started
        bus = EventBus()
        companion = Companion(config, bus)
        await companion.start()
        source = WavSource(wav, realtime=True)
        wall = time.monotonic()
        sink = WavSink(lambda: time.monotonic() - wall, rate=synthesizer.sample_rate, realtime=True)
        session = VoiceSession(brain=CompanionBrain(companion), bus=bus, source=source, sink=sink,
                               transcriber=transcriber, synthesizer=synthesizer, voice=voice)
        started = time.monotonic()
        session.refresh_narration()
        await session.cache.ready.wait()
        narration_fill_s = time.monotonic() - started
        try:
            await session.run()
        finally:
            await session.close()
            await companion.close()
        origin = source.started_at
        totals, stages = [], {}
        for turn in session.loop.latencies:
            if turn.first_audio is None or turn.speech_end is None:
                continue
            # The true end of speech nearest to where the VAD put it.
            end = min(ends, key=lambda e: abs(origin + e - turn.speech_end))
            totals.append((turn.first_audio - (origin + end)) * 1000)
            for name, value in turn.stages_ms().items():
                if value is not None and name != "total":
                    stages.setdefault(name, []).append(value)
        return {
            "utterances": len(UTTERANCES),
            "turns_measured": len(totals),
            "heard_correctly": sum(h.lower().strip(" .?!,") == u.lower().strip(" .?!,")
                                   for h, u in zip(session.loop.heard, UTTERANCES, strict=False)),
            "end_of_turn_silence_ms": silence_ms,
            "speech_end_to_first_audio_ms": {
                "median": round(statistics.median(totals), 1),
                "p95": round(percentile(totals, 95), 1),
                "min": round(min(totals), 1),
                "max": round(max(totals), 1),
            },
            "stage_median_ms": {name: round(statistics.median(v), 1) for name, v in stages.items()},
            "early_transcript_ready_at_end": sum(t.early_transcript_ready for t in session.loop.latencies),
            "model_load_s": round(load_s, 2),
            "narration_cache_fill_s": round(narration_fill_s, 2),
            "narration_lines_cached": len(session.cache),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "load_average_1min": round(os.getloadavg()[0], 2),
            "target_median_ms": 500,
        }


SHORT_SILENCE_MS = 300
"""A short end-of-turn silence, measured beside the default: quicker answers, less room to pause."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # This bench runs without the turn model (bench/turn_taking.py measures it): the fixed silence.
    default = FALLBACK_SILENCE_MS
    parser.add_argument("--silence-ms", type=int, nargs="+", default=sorted({SHORT_SILENCE_MS, default}),
                        help=f"end-of-turn silences to measure (default: {SHORT_SILENCE_MS} and the "
                             f"fixed silence without the turn model, {default})")
    args = parser.parse_args()
    results = {f"silence_{ms}ms": asyncio.run(measure(ms)) for ms in args.silence_ms}
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
