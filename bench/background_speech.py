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

3. The follow-up window (`--window`): distinct voices call her by name (piper's Joe, hibari's
   heart) and, inside the window her answer opens, either the caller follows up with a question
   or another voice says a line that reads as meant for her (the other synthetic voice, espeak-ng,
   real people's recordings from bench/human_speech when its manifest is there), each episode
   followed by silence past the window. One long session per caller, so her voice learning from
   the calls runs as it would. Counted: the caller's follow-ups answered, other voices' lines that
   reached the brain.

`--know-voices no|yes|both` runs each part with knowing voices off, on, or both (side by side).
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
from companion.voice.sound.audio import WavSink, WavSource, read_wav, resample, write_wav  # noqa: E402
from companion.voice.speaking.local import local_synthesizer  # noqa: E402
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


def background(minutes: float, folder: Path, rng: random.Random, spans: list | None = None) -> np.ndarray:
    """The room's talk; `spans` gets (start_s, end_s, voice) of every line."""
    lines = ROOM_LINES + NEWS + NAME_NEAR_MISSES + [line for near in NEAR_MISSES.values() for line in near]
    pieces, total = [], 0.0
    while total < minutes * 60:
        line = rng.choice(lines)  # in this order: the seed's room stays the one measured before
        voice = rng.choice(BACKGROUND_VOICES)
        audio = espeak(line, voice, rng.randint(130, 185), folder)
        gap = rng.uniform(0.4, 2.5)
        pieces += [audio, silence(gap)]
        if spans is not None:
            spans.append((total, total + audio.size / 16_000, voice))
        total += audio.size / 16_000 + gap
    return np.concatenate(pieces)


def follow_ups_let_in(timed: list, spans: list) -> list[str]:
    """Each follow-up that started a turn in the room's talk: whose line it was, after whose call."""
    def voice_at(start: float, end: float) -> str:
        overlap = [(min(end, e) - max(start, s), voice) for s, e, voice in spans if s < end and e > start]
        return max(overlap)[1] if overlap else "?"

    found, opener = [], "?"
    for start, end, verdict in timed:
        if verdict.called and verdict.reason != "follow-up":
            opener = voice_at(start, end)
        elif verdict.turn and verdict.reason == "follow-up":
            found.append(f"{voice_at(start, end)} after {opener}")
    return found


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
    timed: list = []  # (start_s, end_s, verdict) of every utterance judged: which line each was
    judge = session.loop.calling.judge

    async def judged(text: str, start_s: float, end_s: float, **options):
        verdict = await judge(text, start_s, end_s, **options)
        timed.append((start_s, end_s, verdict))
        return verdict

    session.loop.calling.judge = judged
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
            "refused_by_voice": sum(v.reason in VOICE_REFUSALS for v in verdicts),
            "false_lines": [h for h in session.loop.heard], "timed": timed}


VOICE_REFUSALS = ("other-voice", "not-you")
"""What the voice refuses (voice_owner); "someone-else" is the words' own refusal."""
CALL_REASONS = ("name", "called", "wake-phrase")
OWN_FOLLOW_UPS = ["And what day of the week is it?", "Can you set a timer for ten minutes?",
                  "What is the weather like tomorrow?", "Is it going to rain this evening?",
                  "And how far away is that?", "Tell me a joke, please.", "And what about next Monday?",
                  "Can you make it a bit louder?", "How long does it take to get there by train?",
                  "Okay, and what should I wear?", "Read me the next one.", "Why is that?"]
OTHER_LINES = ["Is it my turn to cook tonight?", "Can you pass me the salt?", "What time is the meeting tomorrow?",
               "Have you booked the train tickets yet?", "Remind me to call the dentist tomorrow morning.",
               "Hey, are you coming to lunch?", "Can you turn the music down?", "Where did you put my keys?"]
OTHER_ESPEAK = ["en-us+f3", "en-gb-scotland", "en-029", "en+f2"]
OTHER_PEOPLE = ["cmu-goforward", "arctic-a0007", "librispeech-61", "praatio-sentences", "arctic-slt-a0009",
                "parselmouth-north-wind"]
"""Real people's recordings (bench/human_speech): "Go forward ten meters.", "And you always want to
see it in the superlative degree.", an audiobook sentence, "Bobby ripped the ledger…", "He turned
sharply, and faced Gregson across the table.", "The north wind and the sun."."""
FOLLOW_GAPS_S = (1.5, 4.0)
"""After the call, before the follow-up: right after her answer, and later in the window."""
MANIFEST = Path.home() / ".cache/companion-bench/human-speech/manifest.json"


def window_episodes(caller: str, voices: dict, name: str, folder: Path,
                    rng: random.Random) -> tuple[np.ndarray, list[tuple[str, str, float, float, float]]]:
    """One caller's calls, each followed inside the window by their own follow-up or another
    voice's line, then silence past the window: the audio, and per episode (kind, who follows,
    the call's start, the follow-up's start and end) in seconds of the audio."""
    def say(voice: str, text: str) -> np.ndarray:
        if voice in voices:
            synth = voices[voice]
            return resample(synth.synthesize_sync(text), synth.sample_rate, 16_000)
        return espeak(text, voice, 160, folder)

    follows = [("own", caller, say(caller, line)) for line in OWN_FOLLOW_UPS]
    follows += [("other", voice, say(voice, line)) for voice in voices if voice != caller for line in OTHER_LINES[:4]]
    follows += [("other", voice, say(voice, line)) for voice, line in zip(OTHER_ESPEAK, OTHER_LINES[4:], strict=True)]
    if MANIFEST.is_file():
        clips = {c["clip"]: c for c in json.loads(MANIFEST.read_text())["clips"]}
        for clip in OTHER_PEOPLE:
            audio, rate = read_wav(Path(clips[clip]["wav"]))
            follows.append(("other", clip, resample(audio, rate, 16_000)))
    rng.shuffle(follows)
    pieces, episodes, at = [silence(1.0)], [], 1.0
    for i, (kind, who, audio) in enumerate(follows):
        call = say(caller, f"{name}, {QUESTIONS[i % len(QUESTIONS)]}")
        gap = FOLLOW_GAPS_S[i % len(FOLLOW_GAPS_S)]
        follow_at = at + call.size / 16_000 + gap
        episodes.append((kind, who, at, follow_at, follow_at + audio.size / 16_000))
        pieces += [call, silence(gap), audio, silence(12.0)]
        at = follow_at + audio.size / 16_000 + 12.0
    return np.concatenate(pieces), episodes


def window_counts(timed: list, episodes: list[tuple[str, str, float, float, float]]) -> dict:
    """Per episode, by the times of what was judged: was the call heard, and did the follow-up
    (any utterance inside its span) start a turn?"""
    def inside(start: float, end: float) -> list:
        return [v for s, e, v in timed if s < end + 0.3 and e > start - 0.3]

    missed, own, others, let_in, refused = [], [], 0, [], 0
    for kind, who, call_at, follow_at, follow_end in episodes:
        follow = inside(follow_at, follow_end)
        if not any(v.turn and v.reason in CALL_REASONS for v in inside(call_at, follow_at - 1.0)):
            missed.append(f"{kind}: {who}")  # her name not heard: no window opened, nothing to count
            continue
        refused += sum(v.reason in VOICE_REFUSALS for v in follow)
        if kind == "own":
            own.append(any(v.turn for v in follow))
        else:
            others += 1
            if any(v.turn for v in follow):
                let_in.append(who)
    return {"calls_heard": [len(episodes) - len(missed), len(episodes)], "calls_missed": missed,
            "own_follow_ups_answered": [sum(own), len(own)], "other_voices_reaching_the_brain": [len(let_in), others],
            "let_in": let_in, "refused_by_voice": refused}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=6.0, help="minutes of background speech")
    parser.add_argument("--calls", type=int, default=6, help="calls per wake word and per name (0: the background only)")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--wake-word", default=VoiceSettings().wake_word, choices=sorted(BUNDLED_WAKE_WORDS),
                        help="the wake word listened for during the background")
    parser.add_argument("--know-voices", choices=("no", "yes", "both"), default="no",
                        help="knowing voices off, on, or each part run both ways")
    parser.add_argument("--window", action="store_true", help="also the follow-up window with distinct voices")
    parser.add_argument("--no-background", action="store_true", help="skip the background part")
    args = parser.parse_args()
    knows = ("no", "yes") if args.know_voices == "both" else (args.know_voices,)
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="bench-background-"))
    piper = PiperSynthesizer(resolve_voice("", folder / "models"))
    piper.load()
    hearing = WhisperTranscriber(resolve_hearing_model("", folder / "models"))
    hearing.load()
    shipped = sorted((ROOT / "personality").glob("*.md"))
    default = ROOT / "personality" / "default.md"
    called = VoiceSettings(listening="called", wake_word=args.wake_word, know_voices=knows[0])
    result: dict = {"mode": "called", "hearing": "whisper tiny.en", "wake_word": called.wake_word,
                    "know_voices": args.know_voices}
    with ScriptedBrain() as brain:
        brain.push(*[{"text": "Okay."}] * 800)
        room = folder / "room.wav"
        spans: list = []
        write_wav(room, background(args.minutes, folder, rng, spans), 16_000)
        for know in knows if not args.no_background else ():
            heard = await run(room, brain, folder / f"room-{know}", default, piper, hearing,
                              replace(called, know_voices=know))
            hours = heard["audio_s"] / 3600
            false = heard["turns"] + heard["bare_calls"]
            result["background" if know == knows[0] else f"background:know_voices={know}"] = {
                "know_voices": know, "hours": round(hours, 3), "utterances": heard["utterances"],
                "false_activations": false, "false_activations_per_hour": round(false / hours, 2),
                "by_reason": heard["by_reason"], "refused_by_voice": heard["refused_by_voice"],
                "follow_ups_let_in": follow_ups_let_in(heard["timed"], spans),
                "rate_bound_if_none": round(1 / hours, 1), "near_misses_dropped": heard["near_misses_dropped"],
                "false_lines": heard["false_lines"], "speed_vs_real_time": round(heard["audio_s"] / heard["wall_s"], 2)}
        if args.window:
            name = parse_personality(default.read_text(encoding="utf-8"))[0].name
            voices = {"piper-joe": piper, "hibari/heart": local_synthesizer(resolve_voice("hibari/heart", folder))}
            voices["hibari/heart"].load()
            result["window"] = {}
            for caller in voices:
                audio, episodes = window_episodes(caller, voices, name, folder, random.Random(args.seed))
                wav = folder / f"window-{caller.replace('/', '-')}.wav"
                write_wav(wav, audio, 16_000)
                for know in knows:
                    got = await run(wav, brain, folder / f"window-{caller.replace('/', '-')}-{know}", default, piper,
                                    hearing, replace(called, know_voices=know))
                    result["window"][f"{caller}, know_voices={know}"] = window_counts(got["timed"], episodes)
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
