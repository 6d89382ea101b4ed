"""How many of a real person's words she loses: the human-speech set through her voice session,
beside the same clips straight through Whisper.

Each clip of bench/human_speech's manifest (built by bench/human_speech/fetch.py from registry
packages) is played to a fresh voice session as one stream: the real VAD, Smart Turn, Whisper
tiny.en and piper, *Always answer*, the scripted brain on loopback answering at once. By default
the clip is paced in real time and her reply plays in real time beside it, as in a room: the
person goes on while she answers (no echo path: the microphone holds only the person). With
`--fast` the file is read in its own time and the reader waits while she speaks (her loop's
file mode), which leaves out talking over her.

Per clip and per split ("tune" / "check"), from a word alignment (edit distance, words lower
cased, punctuation and hyphens dropped):
- `floor`: the clip through her Whisper alone, no turn-taking, in pieces under 30 s cut at
  its quietest moments (`floor_transcript`): what hearing alone loses (deleted words) or
  mishears (substituted);
- `vad_floor`: the same, with every stretch her VAD and endpointer never took for speech
  silenced (`vad_heard`): what the VAD's misses add to Whisper's own;
- `session`: every turn's words that reached the brain, joined: what hearing and turn-taking
  lose together; `lost_by_turn_taking` = session deletions - floor deletions;
- `mid_sentence_turn_ends_per_min`: turn ends whose last heard reference word is not a
  sentence end (. ? ! in the hand-punctuated reference) while more words follow, per minute.

    .venv/bin/python bench/human_words.py [--fast] [--split tune|check] [--clips N ...]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from brain_harness import make_config  # noqa: E402
from human_speech.fetch import CACHE, build  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.events import EventBus  # noqa: E402
from companion.runtime import Companion  # noqa: E402
from companion.voice.brain_port import CompanionBrain  # noqa: E402
from companion.voice.factory import load_engines, load_turn_model_or_none, make_vad  # noqa: E402
from companion.voice.session import VoiceSession  # noqa: E402
from companion.voice.sound.audio import WavSink, WavSource, read_wav, write_wav  # noqa: E402
from companion.voice.sound.frames import FRAME_SAMPLES, QUIET_RMS, rms  # noqa: E402
from companion.voice.turns.endpoint import Endpointer, EndpointSettings  # noqa: E402

REPLY = "Sure, I can help with that."
TAIL_S = 3.0
"""Silence after the clip so her last turn can end (her patience is 2 s)."""
NUMBERS = {str(n): word for n, word in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                                  "nine", "ten"))}
SAME = {"mr": "mister", "metres": "meters", "okay": "ok", "alright": "all right", "yknow": "you know",
        "y'know": "you know", "mfa": "m f a", "thyself": "thy self"}
FILLERS = {"um", "uh", "umm", "uhm", "erm", "er", "hm", "hmm", "mm", "mhm", "ah"}
"""Hesitations: in the hand-made references of spontaneous speech, rarely written by Whisper;
left out of both sides, so a filler is neither a lost word nor an inserted one."""


def tokens(text: str) -> list[tuple[str, bool]]:
    """(word, ends a sentence) for each word; hyphens split words so "ill-disposed" is "ill disposed"."""
    out: list[tuple[str, bool]] = []
    for raw in text.split():
        found = re.sub(r"[^a-z0-9' ]+", " ", raw.lower().replace("-", " ")).split()
        found = [x for w in found for x in SAME.get(w, NUMBERS.get(w, w)).split() if x not in FILLERS]
        out += [(w, i == len(found) - 1 and raw.rstrip("\"')").endswith((".", "?", "!"))) for i, w in enumerate(found)]
    return out


def align(ref: list[str], hyp: list[str]) -> list[tuple[int | None, int | None]]:
    """Levenshtein alignment as (ref index, hyp index) pairs; None on one side is a deletion/insertion."""
    n, m = len(ref), len(hyp)
    cost = np.zeros((n + 1, m + 1), np.int32)
    cost[:, 0], cost[0, :] = np.arange(n + 1), np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost[i, j] = min(cost[i - 1, j] + 1, cost[i, j - 1] + 1, cost[i - 1, j - 1] + (ref[i - 1] != hyp[j - 1]))
    pairs, i, j = [], n, m
    while i or j:
        if i and j and cost[i, j] == cost[i - 1, j - 1] + (ref[i - 1] != hyp[j - 1]):
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i and cost[i, j] == cost[i - 1, j] + 1:
            pairs.append((i - 1, None))
            i -= 1
        else:
            pairs.append((None, j - 1))
            j -= 1
    return pairs[::-1]


def score(reference: str, turns: list[str]) -> dict:
    ref = tokens(reference)
    hyp, ends, joined, start = [], [], 0, 0
    for turn in turns:
        words = [w for w, _ in tokens(turn)]
        before = hyp[start:]
        if before and _goes_on(before, words):
            # Going on after her answer: the new turn repeats the one before and replaces it;
            # the earlier turn end still counts, where its words ended.
            joined += 1
            hyp = hyp[:start]
            ends[-1] = start + min(len(before), len(words))
        start = len(hyp)
        hyp += words
        ends.append(len(hyp))  # a turn ended after hyp word len(hyp) - 1
    pairs = align([w for w, _ in ref], hyp)
    deleted = sum(h is None for _, h in pairs)
    inserted = sum(r is None for r, _ in pairs)
    substituted = sum(r is not None and h is not None and ref[r][0] != hyp[h] for r, h in pairs)
    # The reference word each hypothesis word stands on (the last one before it when inserted).
    at, last = {}, -1
    for r, h in pairs:
        last = r if r is not None else last
        if h is not None:
            at[h] = last
    cuts = []
    for end in ends[:-1]:
        r = at.get(end - 1, -1) if end else -1
        if 0 <= r < len(ref) - 1 and not ref[r][1]:
            cuts.append(" ".join(w for w, _ in ref[max(0, r - 3):r + 1]) + " |")
    lost = [ref[r][0] for r, h in pairs if h is None]
    return {"ref_words": len(ref), "deleted": deleted, "lost_words": " ".join(lost), "substituted": substituted, "inserted": inserted,
            "mid_sentence_turn_ends": len(cuts), "cut_after": cuts, "joined_turns": joined}


def _goes_on(before: list[str], words: list[str]) -> bool:
    """The new turn starts with the turn before's words (within a word in five)."""
    head = words[:len(before)]
    misses = sum(r is None or h is None or before[r] != head[h] for r, h in align(before, head))
    return len(words) > len(before) and misses <= len(before) // 5


def floor_transcript(transcriber, audio: np.ndarray, rate: int) -> str:
    """The clip through her transcriber alone, in pieces under Whisper's 30 s window, each cut
    at the quietest 100 ms between 18 and 28 s: what hearing alone loses, without the 30 s path
    (which on a full window stopped after one sentence of Allison's 30 s: 7 words of 67)."""
    pieces, start, step = [], 0, rate // 10
    while audio.size - start > 30 * rate:
        window = audio[start + 18 * rate:start + 28 * rate]
        energy = [float(np.mean(window[i:i + step] ** 2)) for i in range(0, window.size - step, step)]
        cut = start + 18 * rate + int(np.argmin(energy)) * step + step // 2
        pieces.append(audio[start:cut])
        start = cut
    pieces.append(audio[start:])
    return " ".join(transcriber.transcribe_sync(piece) for piece in pieces)


def vad_heard(audio: np.ndarray) -> np.ndarray:
    """`audio` (16 kHz) with every frame outside an utterance of her VAD and endpointer silenced
    (the pre-roll kept, the VAD started afresh at digital silence, as her ear does)."""
    settings = EndpointSettings()
    vad, endpointer = make_vad(), Endpointer(settings)
    pre_roll = settings.pre_roll_ms * 16 // FRAME_SAMPLES
    kept, quiet_before = np.zeros(audio.size, dtype=bool), False
    for at in range(0, audio.size - FRAME_SAMPLES + 1, FRAME_SAMPLES):
        frame = audio[at:at + FRAME_SAMPLES]
        quiet = rms(frame) < QUIET_RMS
        if quiet and not quiet_before and not endpointer.in_speech:
            vad.reset()
        quiet_before = quiet
        endpointer.push(frame, vad.probability(frame))
        if endpointer.in_speech:
            kept[max(0, at - pre_roll * FRAME_SAMPLES):at + FRAME_SAMPLES] = True
    return np.where(kept, audio, 0.0).astype(np.float32)


async def session_turns(wav: Path, brain: ScriptedBrain, folder: Path, engines, turn_model, fast: bool) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    transcriber, synthesizer = engines
    companion = Companion(make_config(folder, brain.url), EventBus())
    await companion.start()
    source = WavSource(wav, realtime=not fast, tail_s=TAIL_S)
    wall = time.monotonic()
    clock = (lambda: source.position_s) if fast else (lambda: time.monotonic() - wall)
    sink = WavSink(clock, rate=synthesizer.sample_rate, realtime=not fast)
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                           transcriber=transcriber, synthesizer=synthesizer, voice=VoiceSettings(listening="always"),
                           turn_model=turn_model)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    return {"turns": list(session.loop.heard), "barge_ins": session.loop.barge_ins,
            "wall_s": round(time.monotonic() - wall, 1)}


def totals(rows: list[dict], key: str) -> dict:
    ref = sum(r["ref_words"] for r in rows)
    got = {name: sum(r[key][name] for r in rows) for name in ("deleted", "substituted", "inserted")}
    return {**got, "lost_pct": round(100 * got["deleted"] / ref, 1),
            "wer_pct": round(100 * sum(got.values()) / ref, 1)}


def summary(rows: list[dict]) -> dict:
    minutes = sum(r["seconds"] for r in rows) / 60
    session = totals(rows, "session")
    floor = totals(rows, "floor")
    vad_floor = totals(rows, "vad_floor")
    cuts = sum(r["session"]["mid_sentence_turn_ends"] for r in rows)
    return {"clips": len(rows), "minutes": round(minutes, 2), "speakers": len({s for r in rows for s in r["speakers"]}),
            "ref_words": sum(r["ref_words"] for r in rows), "floor": floor, "vad_floor": vad_floor,
            "session": session,
            "lost_by_vad_words": vad_floor["deleted"] - floor["deleted"],
            "lost_by_turn_taking_words": session["deleted"] - floor["deleted"],
            "lost_by_turn_taking_pct": round(session["lost_pct"] - floor["lost_pct"], 1),
            "turns": sum(len(r["turns"]) for r in rows), "joined_turns": sum(r["session"]["joined_turns"] for r in rows),
            "barge_ins": sum(r["barge_ins"] for r in rows), "mid_sentence_turn_ends": cuts,
            "mid_sentence_turn_ends_per_min": round(cuts / minutes, 2)}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--fast", action="store_true", help="read the files in their own time (no talking over her)")
    parser.add_argument("--split", choices=("tune", "check"), help="only this split")
    parser.add_argument("--clips", nargs="+", help="only these clips (by name)")
    parser.add_argument("--no-words", action="store_true", help="without the words' language model (issue 52)")
    args = parser.parse_args()
    manifest = args.cache / "manifest.json"
    if not manifest.exists():
        build(args.cache)
    clips = json.loads(manifest.read_text())["clips"]
    clips = [c for c in clips if (args.split in (None, c["split"])) and (not args.clips or c["clip"] in args.clips)]
    started, load = time.monotonic(), os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedBrain(fallback={"text": REPLY}) as brain:
        folder = Path(tmp)
        voice = VoiceSettings(listening="always")
        engines = await load_engines(replace(voice), make_config(folder, brain.url).paths.models_dir)
        turn_model = await load_turn_model_or_none()
        words_model = turn_model.text if turn_model is not None else None
        if args.no_words and turn_model is not None:
            turn_model.text = None
        elif words_model is not None:
            while not words_model.ready:  # it loads in the background: every clip hears with it
                await asyncio.sleep(0.2)
        for clip in clips:
            audio, rate = read_wav(Path(clip["wav"]))
            floor_text = floor_transcript(engines[0], audio, rate)
            vad_text = floor_transcript(engines[0], vad_heard(audio), rate)
            played = folder / f"{clip['clip']}.wav"
            write_wav(played, audio, rate)
            heard = await session_turns(played, brain, folder / clip["clip"], engines, turn_model, args.fast)
            session = score(clip["text"], heard["turns"])
            rows.append({"clip": clip["clip"], "split": clip["split"], "speakers": clip["speakers"],
                         "seconds": clip["seconds"], "ref_words": session.pop("ref_words"),
                         "floor": {k: v for k, v in score(clip["text"], [floor_text]).items()
                                   if k in ("deleted", "substituted", "inserted", "lost_words")},
                         "vad_floor": {k: v for k, v in score(clip["text"], [vad_text]).items()
                                       if k in ("deleted", "substituted", "inserted", "lost_words")},
                         "session": session, "turns": heard["turns"], "floor_text": floor_text,
                         "barge_ins": heard["barge_ins"], "wall_s": heard["wall_s"]})
    out = {"mode": "fast (file time, turns taken)" if args.fast else "real time, she talks beside the person",
           "turn_model": turn_model is not None, "words_model": turn_model is not None and turn_model.text is not None,
           "reply": REPLY,
           "splits": {split: summary([r for r in rows if r["split"] == split])
                      for split in ("tune", "check") if any(r["split"] == split for r in rows)},
           "all": summary(rows), "clips": rows, "wall_s": round(time.monotonic() - started, 1),
           "load_average_1min": [round(load, 2), round(os.getloadavg()[0], 2)]}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
