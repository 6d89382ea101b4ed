"""Her voices: each one's first audio and real-time factor on 2 threads, and each personality's
pitch, pace and how well Whisper tiny.en hears her back.

Voices: piper's en_US-joe-medium (Joe) and hibari's heart, each as installed; then Mira, Jeeves
and Pip as the runtime builds them from their front matter (voice, speed, variation, pitch: the
pitch shift's resampling is in their numbers). First audio is the time from asking for a sentence
to having its audio (her synthesizers hand over one sentence at a time), median of 10, for a short
and a longer first sentence; the real-time factor is synthesis time over audio time for a
five-sentence reply, sentence by sentence. Target: first audio of "Of course." <= 100 ms.
Prints one JSON object.
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

THREADS = 2
SHORT = "Of course."
FIRST = "Good afternoon, I have looked through your notes."
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


def first_audio_ms(engine, text: str, runs: int = 10) -> dict:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        engine.synthesize_sync(text)
        times.append((time.perf_counter() - started) * 1000)
    return {"median": round(statistics.median(times), 1), "max": round(max(times), 1)}


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
              "first_audio_ms": {"short": first_audio_ms(engine, SHORT), "first_sentence": first_audio_ms(engine, FIRST)},
              "real_time_factor": real_time_factor(engine)}
    return result, engine


def main() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    cache = Path(tempfile.mkdtemp(prefix="voices-bench-"))
    hearing = WhisperTranscriber(resolve_hearing_model("", cache))
    hearing.load()
    out: dict = {"threads": THREADS, "cores": os.cpu_count(), "target_first_audio_ms": 100, "voices": {},
                 "personalities": {}}
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
    # The target as issue 54 measured it: "Of course." (piper makes a whole sentence before its
    # first sample, so a long first sentence takes longer on Joe's voices: first_sentence says how much).
    out["all_first_audio_within_target"] = all(
        v["first_audio_ms"]["short"]["median"] <= 100
        for v in (*out["voices"].values(), *out["personalities"].values()))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
