"""Hearing engines side by side: word error rate and transcription time, Whisper tiny.en vs Moonshine base-en.

The clips are the turn-taking bench's questions and thinking-pause sentences (espeak-ng voices
and piper at other speeds, trimmed to their sound, as her ear hands them over after the end of
speech) plus a few more. Every clip goes through both engines one after the other, the order
alternating, so both see the same load; the whole set runs twice: at idle, and with one core
kept busy by a spinning process. Transcription time here is what the ear waits for after the
end of speech when nothing was transcribed before. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from turn_taking import QUESTIONS, THINKING, THINKING_PAUSE_S, say  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.voice.factory import make_transcriber  # noqa: E402
from companion.voice.hearing.moonshine import MoonshineTranscriber  # noqa: E402
from companion.voice.models.files import MOONSHINE, resolve_voice  # noqa: E402
from companion.voice.speaking.tts import PiperSynthesizer  # noqa: E402

RATE = 16_000
MORE = [
    ("Could you remind me to call my sister tomorrow evening?", "en-us"),
    ("Please turn the lights off in the kitchen.", "en-us+m3"),
    ("Set a timer for ten minutes.", "en-gb"),
    ("Who wrote Romeo and Juliet?", "piper@1.0"),
    ("What should I cook for dinner tonight?", "en-us+f2"),
    ("Read me the first paragraph of that article.", "piper@1.1"),
    ("How far away is the moon?", "en-gb-x-rp"),
]
EVERYDAY = [
    "Turn on the lights in the living room.", "What is the weather going to be like tomorrow?",
    "Send a message to Anna saying I will be late.", "How many days are left until Christmas?",
    "Can you find a good Italian restaurant nearby?", "Remind me to take my medicine at eight.",
    "What is the capital of Australia?", "Tell me a joke about computers.",
    "Play the news from this morning.", "How do I make a cup of green tea?",
    "Open the file I was working on yesterday.", "What does the word serendipity mean?",
    "Please read my last email out loud.", "Is it going to rain this afternoon?",
    "Write a short note to the plumber.", "Call my mother after lunch.",
    "How tall is the Eiffel Tower?", "Add eggs and bread to the shopping list.",
    "What was the score of the football game?", "Can you summarise this page for me?",
    "Find the photos from our summer holiday.", "Stop the music, please.",
    "How much is twenty times fifteen?", "Translate good night into French.",
    "Book a table for two on Friday evening.", "What is the longest river in the world?",
    "Turn the volume down a little.", "When does the next train leave for Oxford?",
    "Show me the list of files in my documents folder.", "Thank you, that was very helpful.",
]
VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb-scotland", "piper@0.9", "en-029", "en-gb-x-rp", "en-us+m3",
          "piper@1.2", "en-gb-x-gbclan", "en-us-nyc", "en-us+f2"]
MORE += [(text, VOICES[index % len(VOICES)]) for index, text in enumerate(EVERYDAY)]
ENGINES = {"whisper_tiny_en": "", "moonshine_base_en": MOONSHINE}
SPIN = "while True:\n    pass\n"


NUMBERS = dict(enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                           "ten", "eleven", "twelve"]))
NUMBERS.update({15: "fifteen", 20: "twenty", 300: "three hundred"})
CONTRACTIONS = {"i'm": "i am", "it's": "it is", "what's": "what is", "don't": "do not", "can't": "cannot"}


def rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def words(text: str) -> list[str]:
    """Lower case words without punctuation, so spelling choices are not counted as errors:
    "10" is "ten", "I'm" is "I am", "to-morrow" is "tomorrow"."""
    out = []
    for word in re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("-", "")).split():
        word = NUMBERS.get(int(word), word) if word.isdigit() else word
        out += CONTRACTIONS.get(word, word).split()
    return out


def edit_distance(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, word in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, other in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (word != other))
    return row[-1]


def clips(folder: Path, piper: PiperSynthesizer) -> list[tuple[str, str, np.ndarray]]:
    out = []
    for text, voice in [*QUESTIONS, *MORE]:
        out.append((text, voice, say(text, voice, folder, piper)))
    pause = np.zeros(int(THINKING_PAUSE_S * RATE), dtype=np.float32)
    for parts, voice in THINKING:
        audio = np.concatenate([say(parts[0], voice, folder, piper), pause, say(parts[1], voice, folder, piper)])
        out.append((" ".join(parts), voice, audio))
    # Her ear hands over the utterance with its pre-roll and the start of the pause.
    edge = np.zeros(int(0.3 * RATE), dtype=np.float32)
    return [(text, voice, np.concatenate([edge, audio, edge])) for text, voice, audio in out]


async def run(engines: dict, items: list, *, flip: bool) -> dict[str, list[dict]]:
    """Each clip through each engine as her ear asks: `transcribe()`, on the engine's own model
    thread at its lower priority (called directly, the work would run at the caller's)."""
    seen: dict[str, list[dict]] = {name: [] for name in engines}
    names = list(engines)
    for index, (text, voice, audio) in enumerate(items):
        order = names if (index % 2 == 0) != flip else names[::-1]
        for name in order:
            started = time.perf_counter()
            heard = await engines[name].transcribe(audio)
            ms = (time.perf_counter() - started) * 1000
            errors = edit_distance(words(text), words(heard))
            seen[name].append({"said": text, "voice": voice, "heard": heard, "ms": round(ms, 1),
                               "audio_s": round(audio.size / RATE, 2), "errors": errors,
                               "words": len(words(text))})
    return seen


def summary(results: list[dict]) -> dict:
    ms = [r["ms"] for r in results]
    return {
        "wer_pct": round(100 * sum(r["errors"] for r in results) / sum(r["words"] for r in results), 2),
        "clips_word_for_word": sum(r["errors"] == 0 for r in results),
        "clips": len(results),
        "transcribe_ms_median": round(statistics.median(ms), 1),
        "transcribe_ms_p95": round(float(np.percentile(ms, 95)), 1),
        "transcribe_ms_max": round(max(ms), 1),
        "ms_per_audio_s_median": round(statistics.median(r["ms"] / r["audio_s"] for r in results), 1),
        "misheard": [f"{r['voice']}: {r['said']!r} -> {r['heard']!r}" for r in results if r["errors"]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="passes over the clips per condition (WER is the same each pass)")
    parser.add_argument("--conditions", nargs="+", default=["idle", "one_core_busy"])
    parser.add_argument("--float", action="store_true",
                        help="also Moonshine with its matrix products in float (before int8)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        piper = PiperSynthesizer(resolve_voice("", folder / "models"), steady=True)
        piper.load()
        items = clips(folder, piper)
        engines, load_s = {}, {}
        memory_mb = {}
        for name, setting in ENGINES.items():
            started, before = time.perf_counter(), rss_mb()
            engines[name] = make_transcriber(VoiceSettings(hearing_model=setting), folder / "models")
            load_s[name] = round(time.perf_counter() - started, 2)
            memory_mb[name] = round(rss_mb() - before, 1)
        if args.float:
            engines["moonshine_float"] = MoonshineTranscriber(engines["moonshine_base_en"].model_info,
                                                              folder / "models", int8=False)
            engines["moonshine_float"].load()
        # The first Moonshine load translated its files; later starts read them from the cache.
        started = time.perf_counter()
        MoonshineTranscriber(engines["moonshine_base_en"].model_info, folder / "models").load()
        load_s["moonshine_base_en_cached"] = round(time.perf_counter() - started, 2)
        out: dict = {"clips": len(items), "rounds": args.rounds, "model_load_s": load_s,
                     "memory_mb_added_by_loading": memory_mb,
                     "cpu_threads": {"whisper": engines["whisper_tiny_en"].cpu_threads,
                                     "moonshine": engines["moonshine_base_en"].cpu_threads},
                     "whisper_beam_size": engines["whisper_tiny_en"].beam_size}
        for condition in args.conditions:
            spinner = None
            if condition == "one_core_busy":
                spinner = subprocess.Popen([sys.executable, "-c", SPIN])
            try:
                load_before = os.getloadavg()[0]
                pooled: dict[str, list[dict]] = {name: [] for name in engines}
                for round_ in range(args.rounds):
                    for name, results in asyncio.run(run(engines, items, flip=bool(round_ % 2))).items():
                        pooled[name] += results
                out[condition] = {"load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                                  **{name: summary(results) for name, results in pooled.items()}}
            finally:
                if spinner is not None:
                    spinner.kill()
                    spinner.wait()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
