"""When called: false activations in background speech, called requests answered, the detector's CPU.

Everything is real but the clock: her voice session reads WAV files as fast as it can (the
same VAD, endpointer, Whisper, wake-word model and policy as on a microphone, judged on the
file's own time), the runtime is real and the brain is the scripted server on loopback.

1. Background: `--minutes` of synthesised room talk, ~40 everyday lines (questions, requests,
   her name in mid-sentence, words that sound like it) in 14 espeak-ng voices at several
   speeds and piper at two speeds, in the default When called mode. Every turn, bare call and
   wake-word detection there is a false activation.
2. Called requests: 20 requests, 10 "Mira, …" and 10 "Okay Nabu, …" in mixed voices, each
   after a background line and followed by silence longer than the follow-up window.
3. The detector's cost: the wake-word thread's own CPU time over the audio it heard, and the
   scores each bundled model gives synthetic voices saying its phrase.

Prints one JSON object. `--minutes 30` is the issue's target run (it takes a while).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from brain_harness import PLAIN_PERSONALITY, make_config  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.events import EventBus, UserHeard  # noqa: E402
from companion.runtime import Companion  # noqa: E402
from companion.voice.addressing.wake import BUNDLED_WAKE_WORDS, WAKE_RULES  # noqa: E402
from companion.voice.brain_port import CompanionBrain  # noqa: E402
from companion.voice.hearing.stt import WhisperTranscriber  # noqa: E402
from companion.voice.models.files import resolve_hearing_model, resolve_voice  # noqa: E402
from companion.voice.session import VoiceSession  # noqa: E402
from companion.voice.sound.audio import WavSink, WavSource, read_wav, resample, write_wav  # noqa: E402
from companion.voice.speaking.tts import PiperSynthesizer  # noqa: E402

ROOM_LINES = [
    "Did you see the game last night?", "No, I was at my sister's place. Who won?",
    "The home team, in the very last minute.", "What time is the meeting tomorrow?",
    "Nine o'clock, and please bring the slides.", "Can you pass me the salt?",
    "I told Mira about the new project this morning.", "More coffee, anyone?",
    "Mary, could you close the window please?", "Mirrors are really cheap at that shop.",
    "The weather is supposed to turn cold on Friday.", "Have you booked the train tickets yet?",
    "Okay, so what do we do about the budget?", "Hey, are you coming to lunch?",
    "Let me know when the report is ready.", "I think the bus leaves at six.",
    "Tonight on the news: heavy rain expected across the north.", "Stocks fell sharply in early trading.",
    "And now, a word from our sponsors.", "Turn left at the next junction.",
    "Honestly, I have no idea where I put my keys.", "Is it my turn to cook tonight?",
    "The kids need picking up at three.", "Call your mother, she phoned twice.",
    "What did the doctor say?", "Nothing serious, just rest for a few days.",
    "We should paint the kitchen this summer.", "Who left the lights on in the garage?",
    "Set the table, dinner is almost ready.", "Play that song again, I love it.",
    "Tell me more about your trip to Spain.", "Okay, okay, I'll do the dishes.",
    "Remind me to buy milk on the way home.", "Can you hear me now? The connection is bad.",
    "Next slide please.", "I'll share my screen in a moment.",
    "Mira and I went to the cinema on Sunday.", "My neighbour Myra has a new dog.",
    "Open the door, it's freezing out here.", "What's the time? We're going to be late.",
]
QUESTIONS = [
    "what is the capital of France?", "how tall is Mount Everest?", "what's the weather like tomorrow?",
    "set a timer for ten minutes.", "what time is it?", "remind me to call the dentist.",
    "how many days are there in a leap year?", "tell me a joke.", "what is seven times eight?",
    "who wrote Pride and Prejudice?",
]
VOICES = ["en-us", "en", "en+m1", "en+m2", "en+m3", "en+m4", "en+m7", "en+f1", "en+f2", "en+f3",
          "en-us+f3", "en-us+m5", "en-gb-x-rp", "en-029"]
CALLER_VOICES = ["piper", "en-us", "en", "en+m3", "en+m7"]
"""Voices the called requests are said in (the ones whose "Okay Nabu" the model accepts, see
`synthetic_wake_scores`; female espeak variants score below the cut-off)."""


def espeak(text: str, voice: str, speed: int, folder: Path) -> np.ndarray:
    path = folder / "line.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text], check=True, timeout=30)
    audio, rate = read_wav(path)
    return resample(audio, rate, 16_000)


def piper_says(piper: PiperSynthesizer, text: str, speed: float = 1.0) -> np.ndarray:
    piper.speed = speed
    try:
        return resample(piper.synthesize_sync(text), piper.sample_rate, 16_000)
    finally:
        piper.speed = 1.0


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * 16_000), dtype=np.float32)


def background(minutes: float, piper: PiperSynthesizer, folder: Path, rng: random.Random) -> np.ndarray:
    pieces, total = [], 0.0
    while total < minutes * 60:
        line = rng.choice(ROOM_LINES)
        if rng.random() < 0.15:
            audio = piper_says(piper, line, rng.choice((0.8, 1.2)))
        else:
            audio = espeak(line, rng.choice(VOICES), rng.randint(130, 185), folder)
        gap = rng.uniform(0.4, 2.5)
        pieces += [audio, silence(gap)]
        total += audio.size / 16_000 + gap
    return np.concatenate(pieces)


def called_requests(piper: PiperSynthesizer, folder: Path, rng: random.Random) -> tuple[np.ndarray, int]:
    pieces = []
    for i in range(20):
        call = "Mira" if i % 2 == 0 else "Okay Nabu"
        text = f"{call}, {QUESTIONS[i // 2]}"
        voice = CALLER_VOICES[i % len(CALLER_VOICES)]
        audio = piper_says(piper, text) if voice == "piper" else espeak(text, voice, 150, folder)
        room = espeak(rng.choice(ROOM_LINES), rng.choice(VOICES), 160, folder)
        pieces += [room, silence(1.5), audio, silence(12.0)]  # 12 s: past the 8 s follow-up window
    return np.concatenate(pieces), 20


async def run_file(wav: Path, brain: ScriptedBrain, folder: Path, piper, hearing, voice: VoiceSettings) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    personality = folder / "mira.md"
    personality.write_text(PLAIN_PERSONALITY.format(patterns="").replace("name: Testa", "name: Mira"))
    companion = Companion(make_config(folder, brain.url, personality=personality), EventBus())
    await companion.start()
    turns: list[str] = []
    companion.bus.subscribe(lambda e: turns.append(e.text) if isinstance(e, UserHeard) else None)
    source = WavSource(wav, realtime=False)
    sink = WavSink(lambda: source.position_s, rate=piper.sample_rate)
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                           transcriber=hearing, synthesizer=piper, voice=voice)
    cpu_s, detections = 0.0, []
    started = time.perf_counter()
    try:
        runner = asyncio.create_task(session.run())
        while not runner.done():
            wake = session.loop.calling.wake
            if wake is not None:
                cpu_s, detections = wake.cpu_s, list(wake.detections)
            await asyncio.sleep(0.2)  # sampling the thread's totals before close() drops it
        await runner
    finally:
        await session.close()
        await companion.close()
    verdicts = session.loop.calling.verdicts
    return {"audio_s": round(source.duration_s, 1), "wall_s": round(time.perf_counter() - started, 1),
            "turns": sum(v.turn for v in verdicts), "bare_calls": sum(v.reason == "bare-call" for v in verdicts),
            "utterances": len(verdicts), "wake_detections": len(detections),
            "wake_scores": [round(score, 3) for _, score in detections], "detector_cpu_s": round(cpu_s, 3),
            "reasons": [v.reason for v in verdicts], "turn_texts": turns}


def synthetic_scores(piper: PiperSynthesizer, folder: Path) -> dict:
    from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

    table = {}
    for name, phrase in BUNDLED_WAKE_WORDS.items():
        row = {}
        for voice in ["piper", "en-us", "en", "en+m3", "en+m7", "en-us+f3", "en+f2", "en-us+m5"]:
            text = f"{phrase}, what time is it?"
            audio = piper_says(piper, text) if voice == "piper" else espeak(text, voice, 150, folder)
            model, features, best = MicroWakeWord.from_builtin(Model(name)), MicroWakeWordFeatures(), 0.0
            pcm = (np.clip(np.concatenate([silence(0.5), audio, silence(1.0)]), -1, 1) * 32767).astype("<i2")
            for i in range(0, pcm.size - 512, 512):
                for feature in features.process_streaming(pcm[i:i + 512].tobytes()):
                    best = max(best, model.process_streaming_prob(feature) or 0.0)
            row[voice] = round(best, 3)
        cutoff = WAKE_RULES[name].threshold
        table[name] = {"cutoff": cutoff, "scores": row, "accepted": [v for v, s in row.items() if s > cutoff]}
    return table


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="minutes of background speech")
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="bench-addressed-"))
    piper = PiperSynthesizer(resolve_voice("", folder / "models"), steady=True)
    piper.load()
    hearing = WhisperTranscriber(resolve_hearing_model("", folder / "models"))
    hearing.load()
    called = VoiceSettings(listening="called")
    result: dict = {"mode": "called", "wake_word": called.wake_word, "name": "Mira"}
    with ScriptedBrain() as brain:
        room = folder / "room.wav"
        write_wav(room, background(args.minutes, piper, folder, rng), 16_000)
        run = await run_file(room, brain, folder / "room", piper, hearing, called)
        hours = run["audio_s"] / 3600
        false = run["turns"] + run["bare_calls"]
        result["background"] = {
            "minutes": round(run["audio_s"] / 60, 1), "utterances": run["utterances"],
            "false_activations": false, "false_activations_per_hour": round(false / hours, 2),
            "wake_detections": run["wake_detections"], "wake_scores": run["wake_scores"],
            "brain_requests": len(brain.requests),
            "false_turns": run["turn_texts"],
            "wall_s": run["wall_s"]}
        result["detector_cpu_percent_of_a_core"] = round(100 * run["detector_cpu_s"] / run["audio_s"], 2)
        requests_wav = folder / "called.wav"
        audio, asked = called_requests(piper, folder, rng)
        write_wav(requests_wav, audio, 16_000)
        before = len(brain.requests)
        brain.push(*[{"text": "Okay."}] * 40)
        run = await run_file(requests_wav, brain, folder / "called", piper, hearing, called)
        answered = len(brain.requests) - before
        result["called_requests"] = {"asked": asked, "answered": answered, "share": round(answered / asked, 3),
                                     "reasons": run["reasons"]}
    result["synthetic_wake_scores"] = synthetic_scores(piper, folder)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
