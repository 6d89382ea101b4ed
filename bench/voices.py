"""Her voices: each one's first audio and real-time factor on 2 threads, and each personality's
pitch, pace and how well Whisper tiny.en hears her back.

Voices: piper's en_US-joe-medium (Joe) and hibari's heart, each as installed; then Mira, Jeeves
and Pip as the runtime builds them from their front matter (voice, speed, variation, pitch: the
pitch shift's resampling is in their numbers). First audio is the time from asking for the first
piece of a reply to having its audio, median of 10: her synthesizers hand over one piece at a time,
and her mouth cuts a reply's first sentence short (voice.speaking.sentences: at its first comma, or
after six words), so the piece is the one her SentenceSplitter cuts from each of three first
sentences: a short one, one with a comma (`first_sentence`), one without. `whole_sentence` is the comma sentence
synthesized whole, what the first audio would be without the cut; `steps` splits a first piece's
time into the engine's synthesis and the pitch step; `cpu_ms` is the process's CPU time for it (both
cores), and `min` the fastest of the 10: on a shared machine the closest to a quiet one. The real-time factor is synthesis time
over audio time for a five-sentence reply, sentence by sentence. Target: every first piece <= 100 ms.
The load average before and after is printed with the numbers: on a shared machine the wall-clock
times grow with it. Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from voice_pitch import median_pitch_hz, word_error_rate  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.persona import parse_personality  # noqa: E402
from companion.voice.hearing.stt import WhisperTranscriber  # noqa: E402
from companion.voice.models.files import resolve_hearing_model  # noqa: E402
from companion.voice.sound.audio import resample  # noqa: E402
from companion.voice.speaking.local import load_voice  # noqa: E402
from companion.voice.speaking.pitch import render_speed, shift  # noqa: E402
from companion.voice.speaking.sentences import SentenceSplitter  # noqa: E402

THREADS = 2
FIRST_SENTENCES = {
    "short": "Of course.",
    "first_sentence": "Good afternoon, I have looked through your notes.",
    "no_comma": "I found three files in your workspace that mention the report.",
}
REPLY = [
    "Good afternoon, I have looked through your notes.",
    "Two questions are still open, and one of them is urgent.",
    "The meeting with the architects moved to Thursday at ten.",
    "I also found the invoice you were looking for last week.",
    "Shall I put a reminder in your calendar for tomorrow morning?",
]
HEARD_BACK = "Of course. I will remind you to call your sister tomorrow evening after dinner."
PERSONALITIES = {"Mira": "default.md", "Jeeves": "butler.md", "Pip": "gremlin.md"}


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).split()


def first_piece(sentence: str) -> str:
    """The first piece her mouth hands to her voice when a reply starts with `sentence`."""
    return SentenceSplitter().push(sentence + " ")[0]


def first_audio_ms(engine, text: str, runs: int = 10) -> dict:
    times, cpu = [], []
    for _ in range(runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        engine.synthesize_sync(text)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
    return {"text": text, "median": round(statistics.median(times), 1), "min": round(min(times), 1),
            "max": round(max(times), 1), "cpu_ms": round(statistics.median(cpu), 1)}


def steps_ms(engine, text: str, runs: int = 10) -> dict:
    """A first piece's time split: the engine's synthesis at its render speed, then the pitch step."""
    render, pitch = [], []
    speed = render_speed(engine.speed, engine.pitch)
    for _ in range(runs):
        started = time.perf_counter()
        with engine._lock:
            audio = engine._render(text, speed)
        rendered = time.perf_counter()
        shift(audio, engine.pitch, engine.sample_rate)
        render.append((rendered - started) * 1000)
        pitch.append((time.perf_counter() - rendered) * 1000)
    return {"render": round(statistics.median(render), 1), "render_min": round(min(render), 1),
            "pitch": round(statistics.median(pitch), 2)}


def real_time_factor(engine) -> float:
    spent = audio = 0.0
    for sentence in REPLY:
        started = time.perf_counter()
        samples = engine.synthesize_sync(sentence)
        spent += time.perf_counter() - started
        audio += samples.size / engine.sample_rate
    return round(spent / audio, 4)


def measure(voice: VoiceSettings, cache: Path) -> tuple[dict, object]:
    started = time.perf_counter()
    engine = load_voice(voice, cache)
    result = {"engine": engine.engine, "voice": engine.model_info.name, "load_s": round(time.perf_counter() - started, 2),
              "sample_rate": engine.sample_rate, "speed": voice.speed, "pitch": voice.pitch,
              "first_audio_ms": {kind: first_audio_ms(engine, first_piece(sentence))
                                 for kind, sentence in FIRST_SENTENCES.items()},
              "whole_sentence_ms": first_audio_ms(engine, FIRST_SENTENCES["first_sentence"]),
              "steps": steps_ms(engine, first_piece(FIRST_SENTENCES["no_comma"])),
              "real_time_factor": real_time_factor(engine)}
    return result, engine


def main() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    cache = Path(tempfile.mkdtemp(prefix="voices-bench-"))
    hearing = WhisperTranscriber(resolve_hearing_model("", cache))
    hearing.load()
    out: dict = {"threads": THREADS, "cores": os.cpu_count(), "target_first_audio_ms": 100,
                 "load_average_before": os.getloadavg(), "voices": {}, "personalities": {}}
    for name, voice in (("joe", VoiceSettings()), ("heart", VoiceSettings(voice="hibari/heart"))):
        out["voices"][name], _engine = measure(voice, cache)
    for name, file in PERSONALITIES.items():
        personality, _ = parse_personality((ROOT / "personality" / file).read_text(encoding="utf-8"))
        voice = VoiceSettings().with_personality_voice(personality.voice, personality.speed, personality.variation,
                                                       personality.pitch)
        result, engine = measure(voice, cache)
        audio = engine.synthesize_sync(HEARD_BACK)
        heard = hearing.transcribe_sync(resample(audio, engine.sample_rate, 16_000))
        result.update(median_pitch_hz=round(median_pitch_hz(audio, engine.sample_rate), 1),
                      reply_s=round(audio.size / engine.sample_rate, 2),
                      wer=round(word_error_rate(_words(HEARD_BACK), _words(heard)), 3), heard=heard)
        out["personalities"][name] = result
    out["load_average_after"] = os.getloadavg()
    out["all_first_audio_within_target"] = all(
        first["median"] <= 100
        for v in (*out["voices"].values(), *out["personalities"].values()) for first in v["first_audio_ms"].values())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
