"""Turn-taking, black-box: end of the user's speech → her first sound, on one audio clock.

A private PulseAudio carries everything: the utterances (espeak-ng voices and piper at other
speeds, none of them what the pipeline was tuned on) are played into her virtual microphone,
her voice goes to the virtual speaker, and one two-channel recording (her on the left, the
user on the right, tests/helpers/e2e_support.Stage) gives both on the same clock. She runs at the
default settings with the real models and real devices; the brain is the scripted server on
loopback, answering at once or after 600 ms. A third run puts a 700 ms thinking pause inside
five sentences and counts the turns that ended early. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
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

from audio_env import PrivatePulseAudio, sound_server  # noqa: E402
from brain_harness import make_config  # noqa: E402
from e2e_support import Stage, read_stereo, voiced_spans  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

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
from companion.voice.sound.audio import read_wav, resample, write_wav  # noqa: E402
from companion.voice.speaking.tts import PiperSynthesizer  # noqa: E402
from companion.voice.turns.endpoint import FALLBACK_SILENCE_MS  # noqa: E402

RATE = 16_000
# (text, voice): espeak-ng voice names, or "piper@SPEED" for her own engine at another speed.
QUESTIONS = [
    ("What time is it in Tokyo?", "en-us"),
    ("Could you turn the lights off?", "en-gb"),
    ("Tell me something interesting about octopuses.", "en-us+f3"),
    ("How long does it take to boil an egg?", "en-gb-scotland"),
    ("What is on my calendar tomorrow?", "piper@0.85"),
    ("Please remind me to water the plants.", "en-029"),
    ("Why is the sky blue?", "en-gb-x-rp"),
    ("Can you recommend a good book?", "en-us+m3"),
    ("How do I say thank you in Japanese?", "piper@1.25"),
    ("Add milk to my shopping list.", "en-gb-x-gbclan"),
    ("Good morning, how are you today?", "en-us-nyc"),
    ("What is the tallest mountain in Africa?", "en-us+f2"),
]
THINKING = [
    (("Could you remind me to", "call my sister on Sunday?"), "en-us"),
    (("I am looking for a recipe with", "chicken and rice."), "en-gb"),
    (("What is the weather going to be like in", "London this weekend?"), "piper@0.9"),
    (("Please send a message to", "my landlord about the heating."), "en-us+f3"),
    (("I think I would like to", "listen to some jazz."), "en-gb-x-rp"),
]
THINKING_PAUSE_S = 0.7
REPLY = "Sure, I can help with that."
GAP_S = 5.0
"""Silence after each utterance: her patience (2 s) plus her reply, with room to spare."""


def say(text: str, voice: str, folder: Path, piper: PiperSynthesizer) -> np.ndarray:
    """16 kHz speech of `text`, trimmed to its sound."""
    if voice.startswith("piper@"):
        piper.speed = float(voice.split("@")[1])
        audio = resample(piper.synthesize_sync(text), piper.sample_rate, RATE)
    else:
        wav = folder / "say.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", "160", "-w", str(wav), text], check=True, timeout=30)
        audio, rate = read_wav(wav)
        audio = resample(audio, rate, RATE)
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    return audio[loud[0]:loud[-1] + 1]


def build_input(folder: Path, items: list, piper: PiperSynthesizer) -> Path:
    pieces = [np.zeros(RATE, dtype=np.float32)]
    for text, voice in items:
        parts = [text] if isinstance(text, str) else list(text)
        for index, part in enumerate(parts):
            if index:
                pieces.append(np.zeros(int(THINKING_PAUSE_S * RATE), dtype=np.float32))
            pieces.append(say(part, voice, folder, piper))
        pieces.append(np.zeros(int(GAP_S * RATE), dtype=np.float32))
    path = folder / "user.wav"
    write_wav(path, np.concatenate(pieces), RATE)
    return path


def percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.array(values), q)), 1)


class WithoutPreparation(CompanionBrain):
    """The brain as the voice loop saw it before replies were prepared (for --before)."""

    prepare = None


async def converse(folder: Path, pulse: PrivatePulseAudio, wav: Path, *, brain_delay_s: float, models,
                   before: bool = False) -> dict:
    """One conversation over the real devices; returns what the witness and her loop saw."""
    transcriber, synthesizer, turn_model = models
    reply = {"text": REPLY, **({"delay": brain_delay_s} if brain_delay_s else {})}
    with ScriptedBrain(fallback=reply) as brain:
        config = make_config(folder, brain.url)
        companion = Companion(config, EventBus())
        await companion.start()
        # The defaults, devices included (the stage's speaker and microphone); the questions
        # don't start with her name, so she answers every voice.
        voice = VoiceSettings(listening="always")
        source, sink, notices, echo = await open_devices(voice, sample_rate=synthesizer.sample_rate)
        assert not notices, notices
        parts = VoiceParts(vad=make_vad(), transcriber=transcriber, synthesizer=synthesizer, source=source,
                           sink=sink, listening=True, turn_model=turn_model, echo=echo)
        if before:
            voice = replace(voice, end_of_turn_silence_ms=FALLBACK_SILENCE_MS)
        port = (WithoutPreparation if before else CompanionBrain)(companion)
        session = VoiceSession.from_parts(parts, brain=port, bus=companion.bus, voice=voice)
        running = asyncio.ensure_future(session.run())
        stage = Stage(pulse)
        witness = folder / "witness.wav"
        try:
            await asyncio.sleep(1.5)  # PortAudio's first callbacks (an outside program: no event to wait on)
            recorder = stage.record(witness)
            player = stage.say(wav)
            await asyncio.to_thread(player.wait)
            await asyncio.sleep(1.0)
            recorder.send_signal(signal.SIGINT)
            await asyncio.to_thread(recorder.wait, 10)
        finally:
            await session.close()
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await companion.close()
        return {"witness": witness, "loop": session.loop, "requests": len(brain.requests)}


def first_sounds(witness: Path) -> list[float]:
    """For each stretch of the user's speech: ms from its end to her next sound (None if none)."""
    her, user = read_stereo(witness)
    said = voiced_spans(user, min_gap_s=1.0)
    answers = voiced_spans(her, min_gap_s=0.3)
    out = []
    for index, (_start, end) in enumerate(said):
        next_start = said[index + 1][0] if index + 1 < len(said) else float("inf")
        onset = next((a for a, _b in answers if end < a < next_start), None)
        out.append(round((onset - end) * 1000, 1) if onset is not None else None)
    return out


def turn_stats(loop) -> dict:
    verdicts = [v for t in loop.latencies for v in t.verdicts]
    synth = [t.first_fragment_synth_ms for t in loop.latencies if t.first_fragment_synth_ms is not None]
    pauses = [t.stages_ms()["end_of_speech_wait"] for t in loop.latencies]
    pauses = [p for p in pauses if p is not None]
    return {
        "turns": len(loop.latencies),
        "pause_ms_median": round(statistics.median(pauses), 1) if pauses else None,
        "turn_checks": len(verdicts),
        "turn_checks_per_turn": round(len(verdicts) / max(1, len(loop.latencies)), 2),
        "turn_model_ms_median": round(statistics.median(v.model_ms for v in verdicts), 1) if verdicts else None,
        "turn_model_ms_p95": percentile([v.model_ms for v in verdicts], 95) if verdicts else None,
        "first_fragment_synth_ms_median": round(statistics.median(synth), 1) if synth else None,
        "first_fragments": sorted({t.first_fragment for t in loop.latencies}),
        "replies_prepared": loop.preparer.started,
        "prepared_reply_used": sum(t.prepared_in_time is not None for t in loop.latencies),
        "prepared_in_time": sum(bool(t.prepared_in_time) for t in loop.latencies),
        "prepared_thrown_away": loop.preparer.discarded,
        "per_turn": [t.report() for t in loop.latencies],
    }


async def measure(which: list[str], *, before: bool = False, hearing_model: str = "") -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with sound_server(folder / "pulse") as pulse:
            stage = Stage(pulse).start()
            try:
                started = time.monotonic()
                transcriber, synthesizer = await load_engines(VoiceSettings(hearing_model=hearing_model),
                                                              folder / "models")
                turn_model = None if before else await load_turn_model_or_none()
                models = (transcriber, synthesizer, turn_model)
                load_s = time.monotonic() - started
                piper = PiperSynthesizer(synthesizer.model_info)
                piper.load()
                results: dict = {"turn_model": turn_model is not None, "model_load_s": round(load_s, 2),
                                 "hearing": type(transcriber).__name__}
                for name, items, delay in (("instant_brain", QUESTIONS, 0.0), ("brain_600ms", QUESTIONS, 0.6),
                                           ("thinking_pauses", THINKING, 0.0)):
                    if name not in which:
                        continue
                    run = folder / name
                    run.mkdir()
                    wav = build_input(run, items, piper)
                    load_before = os.getloadavg()[0]
                    seen = await converse(run, pulse, wav, brain_delay_s=delay, models=models, before=before)
                    entry = {"utterances": len(items), "brain_first_token_delay_ms": int(delay * 1000),
                             "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                             "heard": list(seen["loop"].heard), **turn_stats(seen["loop"])}
                    if name == "thinking_pauses":
                        entry["ended_early"] = max(0, len(seen["loop"].heard) - len(items))
                        entry["one_turn_each"] = len(seen["loop"].heard) == len(items)
                    else:
                        totals = first_sounds(seen["witness"])
                        measured = [t for t in totals if t is not None]
                        entry["speech_end_to_first_sound_ms"] = {
                            "median": round(statistics.median(measured), 1) if measured else None,
                            "p95": percentile(measured, 95) if measured else None,
                            "min": min(measured, default=None), "max": max(measured, default=None),
                            "measured": len(measured), "each": totals,
                        }
                    results[name] = entry
            finally:
                stage.stop()
        results["targets"] = {"instant_median_ms": 350, "instant_p95_ms": 500, "brain_600ms_median_ms": 900,
                              "thinking_pauses_ended_early": 0}
        return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=["instant_brain", "brain_600ms", "thinking_pauses"])
    parser.add_argument("--per-turn", action="store_true", help="keep every turn's report in the JSON")
    parser.add_argument("--before", action="store_true",
                        help="the pipeline as it was before: no turn model, no prepared replies, 500 ms silence")
    parser.add_argument("--hearing-model", default="",
                        help="her hearing engine, as the voice.hearing_model setting (e.g. moonshine-base-en)")
    args = parser.parse_args()
    results = asyncio.run(measure(args.only, before=args.before, hearing_model=args.hearing_model))
    if not args.per_turn:
        for entry in results.values():
            if isinstance(entry, dict):
                entry.pop("per_turn", None)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
