"""Who she answers in a room: false activations per hour of background speech, and the share of
calls answered per wake word and per shipped name.

Everything is real but the clock: a voice session reads WAV files as fast as it can (the same
VAD, endpointer, Whisper tiny.en, microWakeWord models, name learning and policy as on a
microphone, judged on the file's own time), the runtime is real and the brain is the scripted
server on loopback.

1. Background: `--minutes` of room talk in 16 espeak-ng voices at several speeds (none hers):
   everyday lines, news-like lines, near misses of every bundled wake word ("Okay, now move the
   table", "Hey, my crop failed", "Alexandria") and of each shipped name ("Mirror", "Geeves",
   "Pippa"), in the default When called mode with her name on. Every turn or bare call is a
   false activation.
2. Called: for each bundled wake word and each shipped personality's name, `--calls` requests
   ("<call>, <question>") in voices the learning never used, each after a room line and followed
   by silence longer than the follow-up window. Each wake word's calls are heard twice: by the
   detector alone ("wake:", her name off) and with her name on ("wake+name:", the default,
   where the phrase in Whisper's words calls her too).

Prints one JSON object. `--minutes 6 --calls 6` takes a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))
sys.path.insert(0, str(ROOT / "bench"))

from addressed import QUESTIONS, ROOM_LINES, espeak, silence  # noqa: E402
from brain_harness import make_config  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402
from wake_calibration import NEAR_MISSES  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.events import EventBus  # noqa: E402
from companion.persona.document import parse_personality  # noqa: E402
from companion.runtime import Companion  # noqa: E402
from companion.voice.addressing.wake import BUNDLED_WAKE_WORDS  # noqa: E402
from companion.voice.brain_port import CompanionBrain  # noqa: E402
from companion.voice.hearing.stt import WhisperTranscriber  # noqa: E402
from companion.voice.models.files import resolve_hearing_model, resolve_voice  # noqa: E402
from companion.voice.session import VoiceSession  # noqa: E402
from companion.voice.sound.audio import WavSink, WavSource, write_wav  # noqa: E402
from companion.voice.speaking.tts import PiperSynthesizer  # noqa: E402

BACKGROUND_VOICES = ["en-us", "en", "en+m1", "en+m2", "en+m3", "en+m4", "en+m7", "en+f1", "en+f2", "en+f3",
                     "en-us+f3", "en-us+m5", "en-gb-x-rp", "en-029", "en-us-nyc", "en-gb-scotland"]
NAME_NEAR_MISSES = ["The mirror in the hall is cracked.", "Mirror, mirror on the wall.", "Geese flew over the lake.",
                    "Pippa is coming over later.", "Pick up the kids, please.", "Deep breaths, everyone.",
                    "Bib and brace overalls are back.", "Jeez, what a day."]
NEWS = ["Tonight on the news: heavy rain expected across the north.", "Stocks fell sharply in early trading.",
        "The minister said the talks would continue next week.", "Traffic is slow on the ring road after a crash."]
CALLER_VOICES = ["en+m1", "en+m7", "en-us+m5", "en"]
"""Not among the voices her names are learned in (voice.addressing.learning.ESPEAK_VOICES)."""


def background(minutes: float, folder: Path, rng: random.Random) -> np.ndarray:
    lines = ROOM_LINES + NEWS + NAME_NEAR_MISSES + [line for near in NEAR_MISSES.values() for line in near]
    pieces, total = [], 0.0
    while total < minutes * 60:
        audio = espeak(rng.choice(lines), rng.choice(BACKGROUND_VOICES), rng.randint(130, 185), folder)
        gap = rng.uniform(0.4, 2.5)
        pieces += [audio, silence(gap)]
        total += audio.size / 16_000 + gap
    return np.concatenate(pieces)


def calls(call: str, count: int, folder: Path, rng: random.Random) -> np.ndarray:
    pieces = []
    for i in range(count):
        room = espeak(rng.choice(ROOM_LINES), rng.choice(BACKGROUND_VOICES), 160, folder)
        asked = espeak(f"{call}, {QUESTIONS[i % len(QUESTIONS)]}", CALLER_VOICES[i % len(CALLER_VOICES)], 150, folder)
        pieces += [room, silence(1.5), asked, silence(12.0)]  # 12 s: past the 8 s follow-up window
    return np.concatenate(pieces)


async def run(wav: Path, brain: ScriptedBrain, folder: Path, personality: Path, piper, hearing,
              voice: VoiceSettings) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    companion = Companion(make_config(folder, brain.url, personality=personality), EventBus())
    await companion.start()
    source = WavSource(wav, realtime=False)
    sink = WavSink(lambda: source.position_s, rate=piper.sample_rate)
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                           transcriber=hearing, synthesizer=piper, voice=voice)
    before, started = len(brain.requests), time.perf_counter()
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    verdicts = session.loop.calling.verdicts
    return {"audio_s": source.duration_s, "wall_s": time.perf_counter() - started,
            "turns": sum(v.turn for v in verdicts), "bare_calls": sum(v.reason == "bare-call" for v in verdicts),
            "near_misses_dropped": sum(v.reason == "near-miss" for v in verdicts), "utterances": len(verdicts),
            "requests": len(brain.requests) - before,
            "by_reason": dict(Counter(v.reason for v in verdicts if v.called)),
            "false_lines": [h for h in session.loop.heard]}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=6.0, help="minutes of background speech")
    parser.add_argument("--calls", type=int, default=6, help="calls per wake word and per name (0: the background only)")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--wake-word", default=VoiceSettings().wake_word, choices=sorted(BUNDLED_WAKE_WORDS),
                        help="the wake word listened for during the background")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="bench-background-"))
    piper = PiperSynthesizer(resolve_voice("", folder / "models"))
    piper.load()
    hearing = WhisperTranscriber(resolve_hearing_model("", folder / "models"))
    hearing.load()
    shipped = sorted((ROOT / "personality").glob("*.md"))
    default = ROOT / "personality" / "default.md"
    called = VoiceSettings(listening="called", wake_word=args.wake_word)
    result: dict = {"mode": "called", "hearing": "whisper tiny.en", "wake_word": called.wake_word}
    with ScriptedBrain() as brain:
        brain.push(*[{"text": "Okay."}] * 400)
        room = folder / "room.wav"
        write_wav(room, background(args.minutes, folder, rng), 16_000)
        heard = await run(room, brain, folder / "room", default, piper, hearing, called)
        hours = heard["audio_s"] / 3600
        false = heard["turns"] + heard["bare_calls"]
        result["background"] = {
            "hours": round(hours, 3), "utterances": heard["utterances"], "false_activations": false,
            "false_activations_per_hour": round(false / hours, 2), "by_reason": heard["by_reason"],
            "rate_bound_if_none": round(1 / hours, 1), "near_misses_dropped": heard["near_misses_dropped"],
            "false_lines": heard["false_lines"], "speed_vs_real_time": round(heard["audio_s"] / heard["wall_s"], 2)}
        answered: dict = {}
        for word, phrase in BUNDLED_WAKE_WORDS.items() if args.calls else ():
            wav = folder / f"{word}.wav"
            write_wav(wav, calls(phrase, args.calls, folder, rng), 16_000)
            # The detector alone (her name off: Whisper skips the room), then her default (her
            # name on: the phrase in Whisper's words calls her too), on the same calls.
            for key, name_wakes in ((f"wake:{word}", False), (f"wake+name:{word}", True)):
                got = await run(wav, brain, folder / key.replace(":", "-"), default, piper, hearing,
                                replace(called, wake_word=word, name_wakes=name_wakes))
                answered[key] = [got["turns"], args.calls]
        for path in shipped if args.calls else ():
            name = parse_personality(path.read_text(encoding="utf-8"))[0].name
            wav = folder / f"{name}.wav"
            write_wav(wav, calls(name, args.calls, folder, rng), 16_000)
            got = await run(wav, brain, folder / name, path, piper, hearing, called)
            answered[f"name:{name}"] = [got["turns"], args.calls]
        result["called"] = {key: {"answered": a, "asked": n, "share": round(a / n, 2)} for key, (a, n) in answered.items()}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
