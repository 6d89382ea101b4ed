"""A spoken conversation with a brain at a laptop's pace: per turn, end of speech → her first
sound, and the longest stretch with neither her face nor her voice answering.

The scripted brain answers at tests/helpers/brain_pace.py's LAPTOP_3B profile (a 3 B model on a
laptop CPU: prompt tokens past the cached prefix at ~60 a second, ~8 written a second, 3 s to
load the model; one request at a time, so the start-up warm-up holds the first question back).
The questions (espeak-ng, not her voice) are paced in real time into a real voice session (real
Whisper, real voice, a real-time WAV sink); each question starts 1.5 s after she went quiet.
It runs the conversation twice from a cold server: with her thinking line off
(`thinking_line_s = 0`) and at the default. End of speech is when the question's last loud
frame was read; her first sound is when her first line began playing.

    .venv/bin/python bench/laptop_brain.py [--turns 5] [--half-speed-batch TOKENS] [--long] [--compare-fill]

The ear's words so far go to her preparer as prompt fills (bench/llama_server/early_words.py,
companion/brain/fill.py; the modelled server evaluates each into its cache like any request).
`--long` asks bench/llama_server's 25-34-word questions; `--compare-fill` runs the conversation
with fills off, then on, thinking line at its default.

Prints one JSON object.
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
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "helpers"), str(ROOT / "bench" / "llama_server")]

from brain_harness import make_config  # noqa: E402
from brain_pace import LAPTOP_3B, Pace  # noqa: E402
from early_words import install as install_early_words  # noqa: E402
from long_questions import LONG_QUESTIONS  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.events import EventBus, SpeakingChanged, StateChanged  # noqa: E402
from companion.runtime import Companion  # noqa: E402
from companion.voice.brain_port import CompanionBrain  # noqa: E402
from companion.voice.factory import load_engines  # noqa: E402
from companion.voice.session import VoiceSession  # noqa: E402
from companion.voice.sound.audio import WavSink, read_wav, resample  # noqa: E402
from companion.voice.sound.frames import FRAME_S, FRAME_SAMPLES  # noqa: E402

CONVERSATION = (
    ("What time is it in Tokyo?", "[neutral] I can't see a clock for Tokyo from here. It is nine hours ahead of London."),
    ("Why is the sky blue?", "[happy] Sunlight scatters off the air, and blue light scatters most. So the sky looks blue."),
    ("How long should I boil an egg?", "[neutral] About seven minutes for a firm yolk. Six if you like it a bit soft."),
    ("Can you recommend a good book?", "[excited] Try The Hobbit. It's short, warm and funny."),
    ("Thanks, that's all for now.", "[happy] You're welcome. Talk soon!"),
)
LONG_ANSWER = "[neutral] Start slowly and keep it easy at first. Then add a little more each week."
"""Every long question's answer (`--long`): replies prepared at a pause for earlier words take
one each, so a queue of answers would shift."""
ANSWERING = ("thinking", "speaking", "working", "waiting")
"""Face states that tell the user she is on it (listening and idle do not)."""
QUIET_BEFORE_NEXT_S = 1.5


def espeak(text: str, folder: Path) -> np.ndarray:
    wav = folder / "q.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(wav), text], check=True, timeout=30)
    audio, rate = read_wav(wav)
    audio = resample(audio, rate, 16_000)
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    return audio[loud[0]:loud[-1] + 1]


class Speaker:
    """The user: each question at the pace of speech, the next once she has been quiet a while."""

    realtime = True

    def __init__(self, questions: list[np.ndarray]) -> None:
        self._frames = [np.concatenate([q, np.zeros(-q.size % FRAME_SAMPLES, dtype=np.float32)])
                        for q in questions]
        self._question = 0
        self._at = 0
        self._quiet_since: float | None = time.monotonic()
        self._clock: float | None = None
        self._waiting = True
        self.ends: list[float] = []
        """time.monotonic() each question's last frame was read."""
        self._closed = False

    def busy(self, busy: bool) -> None:
        self._quiet_since = None if busy else time.monotonic()

    async def read(self) -> np.ndarray | None:
        if self._closed:
            return None
        now = time.monotonic()
        self._clock = now if self._clock is None else self._clock + FRAME_S
        if self._clock > now:
            await asyncio.sleep(self._clock - now)  # the pace of speech
        else:
            self._clock = now
        silence = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        if self._waiting:
            quiet = self._quiet_since is not None and time.monotonic() - self._quiet_since >= QUIET_BEFORE_NEXT_S
            if not quiet:
                return silence
            if self._question >= len(self._frames):
                return None
            self._waiting = False
        audio = self._frames[self._question]
        frame = audio[self._at:self._at + FRAME_SAMPLES]
        self._at += FRAME_SAMPLES
        if self._at >= audio.size:
            self.ends.append(time.monotonic())
            self._question += 1
            self._at = 0
            self._waiting = True
            self._quiet_since = None  # until she has answered
        return frame

    def close(self) -> None:
        self._closed = True


def longest_gap(start: float, end: float, covered: list[tuple[float, float]]) -> float:
    """The longest part of [start, end] outside every interval in `covered`."""
    longest, at = 0.0, start
    for a, b in sorted(covered):
        if b <= at:
            continue
        if a > at:
            longest = max(longest, min(a, end) - at)
        at = max(at, b)
        if at >= end:
            break
    return max(longest, end - at) if at < end else longest


def since(timeline: list[tuple[float, bool]], start: float) -> list[tuple[float, bool]]:
    """The timeline from `start` on, starting with the value it had then."""
    before = [on for t, on in timeline if t <= start]
    return [(start, before[-1] if before else False)] + [(t, on) for t, on in timeline if t > start]


def spans(timeline: list[tuple[float, bool]], until: float) -> list[tuple[float, float]]:
    """Intervals where a timeline of (time, on) changes was on."""
    out, began = [], None
    for t, on in timeline:
        if on and began is None:
            began = t
        elif not on and began is not None:
            out.append((began, t))
            began = None
    if began is not None:
        out.append((began, until))
    return out


async def conversation(engines, thinking_line_s: float, turns: int, pace: Pace, folder: Path, *,
                       long: bool = False, fill: bool = True) -> dict:
    transcriber, synthesizer = engines
    questions = list(LONG_QUESTIONS[:turns]) if long else [q for q, _answer in CONVERSATION[:turns]]
    script = [] if long else [{"text": answer} for _question, answer in CONVERSATION[:turns]]
    with ScriptedBrain(script, pace=pace, fallback={"text": LONG_ANSWER} if long else None) as brain:
        evaluate = brain.slot.prompt

        def noted(body: dict, wait) -> bool:
            """Each modelled request's counts, marked as a fill (one token asked, not the warm-up)."""
            stopping = evaluate(body, wait)
            last_user = [m for m in body.get("messages") or [] if m.get("role") == "user"][-1]["content"]
            brain.slot.timings[-1]["fill"] = body.get("max_tokens") == 1 and last_user != "Hi"
            return stopping

        brain.slot.prompt = noted
        voice = replace(VoiceSettings(listening="always"), thinking_line_s=thinking_line_s)
        run = folder / f"run-{thinking_line_s}-{fill}"
        run.mkdir()
        config = make_config(run, brain.url, brain={"fill_while_speaking": fill})
        bus = EventBus()
        face: list[tuple[float, bool]] = []
        playing: list[tuple[float, bool]] = []
        bus.subscribe(lambda e: face.append((time.monotonic(), str(e.state) in ANSWERING))
                      if isinstance(e, StateChanged) else None)
        bus.subscribe(lambda e: playing.append((time.monotonic(), e.speaking))
                      if isinstance(e, SpeakingChanged) else None)
        companion = Companion(config, bus)
        await companion.start()  # her warm-up request goes to the cold server now
        user = Speaker([espeak(q, folder) for q in questions])
        wall = time.monotonic()
        sink = WavSink(lambda: time.monotonic() - wall, rate=synthesizer.sample_rate, realtime=True)
        session = VoiceSession(brain=CompanionBrain(companion), bus=bus, source=user, sink=sink,
                               transcriber=transcriber, synthesizer=synthesizer, voice=voice)
        early = install_early_words(session.loop)  # the ear's words so far reach her preparer
        lines: list[tuple[float, str, str]] = []
        mouth_playing = session.speaker.on_playing

        def on_playing(line) -> None:
            lines.append((time.monotonic(), str(line.kind), line.text))
            mouth_playing(line)

        session.speaker.on_playing = on_playing
        session.loop.on_busy.append(user.busy)
        quiet_at: list[float] = []
        session.loop.on_busy.append(lambda busy: None if busy else quiet_at.append(time.monotonic()))
        try:
            await session.run()
        finally:
            await session.close()
            await companion.close()
        timings = list(brain.slot.timings)
        fills = brain.warm_ups[1:]
    end_all = time.monotonic()
    report = []
    for index, ended in enumerate(user.ends):
        next_end = user.ends[index + 1] if index + 1 < len(user.ends) else end_all
        quiet = next((t for t in quiet_at if ended < t < next_end), next_end)
        said = [(t, kind, text) for t, kind, text in lines if ended <= t < next_end]
        answer = next((t for t, kind, _text in said if kind == "say"), None)
        first = said[0][0] if said else None
        face_on = next((t for t, on in face if t >= ended and on), None)
        voice_spans = spans(since(playing, ended), quiet)
        face_spans = spans(since(face, ended), quiet)
        report.append({
            "question": questions[index],
            "first_sound_ms": round((first - ended) * 1000) if first else None,
            "answer_first_sound_ms": round((answer - ended) * 1000) if answer else None,
            "thinking_line": next((text for _t, kind, text in said if kind == "thinking"), None),
            "face_answering_ms": round((face_on - ended) * 1000) if face_on else None,
            "longest_silence_ms": round(longest_gap(ended, quiet, voice_spans + face_spans) * 1000),
            "longest_voice_silence_before_answer_ms": (
                round(longest_gap(ended, answer, voice_spans) * 1000) if answer else None),
        })
    later = [t["first_sound_ms"] for t in report[1:] if t["first_sound_ms"] is not None]
    return {
        "thinking_line_s": thinking_line_s,
        "fill_while_speaking": fill,
        "fills_sent": len(fills),
        "real_prompt_n": [t["prompt_n"] for t in timings[1:] if not t["fill"]],
        "fill_prompt_n": [t["prompt_n"] for t in timings if t["fill"]],
        "words_so_far_heard": len(early.words),
        "turns": report,
        "median_first_sound_ms_turns_2_on": round(statistics.median(later)) if later else None,
        "max_longest_silence_ms": max(t["longest_silence_ms"] for t in report) if report else None,
        "server_timings": timings,
        "heard": session.loop.heard,
    }


async def main_async(turns: int, half_speed_batch: float | None = None, *, long: bool = False,
                     compare_fill: bool = False) -> dict:
    pace = LAPTOP_3B if half_speed_batch is None else replace(LAPTOP_3B, half_speed_batch=half_speed_batch)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        voice = VoiceSettings(listening="always")
        engines = await load_engines(voice, make_config(folder, "http://127.0.0.1:9/v1").paths.models_dir)
        profile = {"name": pace.name, "prompt_tps": pace.prompt_tps, "write_tps": pace.write_tps,
                   "load_s": pace.load_s, "half_speed_batch": pace.half_speed_batch}
        if compare_fill:
            off = await conversation(engines, 1.2, turns, pace, folder, long=long, fill=False)
            on = await conversation(engines, 1.2, turns, pace, folder, long=long, fill=True)
            return {"profile": profile, "long_questions": long, "fill_off": off, "fill_on": on,
                    "load_average_1min": round(os.getloadavg()[0], 2)}
        runs = [await conversation(engines, seconds, turns, pace, folder, long=long) for seconds in (0.0, 1.2)]
    return {
        "profile": profile, "long_questions": long,
        "without_thinking_line": runs[0],
        "with_thinking_line": runs[1],
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=len(CONVERSATION))
    parser.add_argument("--half-speed-batch", type=float,
                        help="the profile's per-batch cost in tokens (default: LAPTOP_3B's)")
    parser.add_argument("--long", action="store_true", help="bench/llama_server's 25-34-word questions")
    parser.add_argument("--compare-fill", action="store_true",
                        help="thinking line at 1.2 s, brain.fill_while_speaking off then on")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(min(args.turns, len(CONVERSATION)), args.half_speed_batch,
                                            long=args.long, compare_fill=args.compare_fill))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
