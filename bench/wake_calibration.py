"""Calibrates the wake-word rules (voice.addressing.wake.WAKE_RULES) on a negative set of our own.

For each bundled microWakeWord model: the phrase said in espeak-ng voices at two speeds and in
her piper voice (positives), and near misses of every bundled phrase ("Okay, now move the
table", "Hey, my crop failed", "Alexandria in Egypt") plus everyday room lines in 16 espeak-ng
voices, none hers (negatives). Each clip's score trace is kept at the model's own rate (one
output every 30 ms); for a grid of thresholds and hold lengths it counts the positives and
negatives that would fire, and reports the current rule against the model's own cut-off.
It also prints how Whisper writes each phrase in the voices the rule accepts (the call's
spellings for the transcript check, voice.addressing.heard.WAKE_SPELLINGS).

Prints one JSON object. Takes about two minutes on two cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from companion.voice.addressing.wake import BUNDLED_WAKE_WORDS, WAKE_RULES  # noqa: E402
from companion.voice.hearing.stt import WhisperTranscriber  # noqa: E402
from companion.voice.models.files import resolve_hearing_model, resolve_voice  # noqa: E402
from companion.voice.sound.audio import read_wav, resample  # noqa: E402
from companion.voice.speaking.tts import PiperSynthesizer  # noqa: E402

VOICES = ["en-us", "en", "en+m1", "en+m2", "en+m3", "en+m4", "en+m7", "en+f1", "en+f2", "en+f3", "en-us+f3",
          "en-us+m5", "en-gb-x-rp", "en-029", "en-us-nyc", "en-gb-scotland"]
NEAR_MISSES = {
    "okay_nabu": ["Okay, now what do we do?", "Okay, now let's start.", "Okay, nobody is here.",
                  "Okay, now move the table.", "Okay, okay, I'll do the dishes.", "Okay, Naomi, come in.",
                  "Okay, no bother.", "Okay, noted.", "Oh, kay, knobs.", "Okay, and now the news."],
    "hey_jarvis": ["Hey, Travis, come here.", "Hey, are you coming?", "Hey, Mavis.", "The harvest is soon.",
                   "Hey, Java is slow.", "Hey, jar of this.", "Hey, Charlie's here.", "Hey Davis, how are you?"],
    "hey_mycroft": ["Hey, my craft beer.", "Hey, Microsoft called.", "Hey, my crop failed.", "Hey, Minecraft again?",
                    "Hey, my car is left."],
    "alexa": ["Alex, stop that.", "Alexander is here.", "A lexicon of words.", "Alexis called.",
              "The election is soon.", "Alexandria in Egypt.", "Relax a bit."],
}
ROOM = ["Did you see the game last night?", "What time is the meeting tomorrow?", "Hey, what's for dinner?",
        "Okay, so what do we do about the budget?"]
TAIL = "what time is it"


def espeak(text: str, voice: str, speed: int, folder: Path) -> np.ndarray:
    path = folder / "line.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text], check=True, timeout=30)
    audio, rate = read_wav(path)
    return resample(audio, rate, 16_000)


def outputs(name: str, audio: np.ndarray) -> np.ndarray:
    """The model's own outputs (every stride-th feature) over half a second, the clip, a second."""
    from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

    model, features, scores, fed = MicroWakeWord.from_builtin(Model(name)), MicroWakeWordFeatures(), [], 0
    pcm = np.concatenate([np.zeros(8_000, np.float32), audio, np.zeros(16_000, np.float32)])
    pcm = (np.clip(pcm, -1, 1) * 32767).astype("<i2")
    for i in range(0, pcm.size - 512, 512):
        for feature in features.process_streaming(pcm[i:i + 512].tobytes()):
            score = model.process_streaming_prob(feature)
            fed += 1
            if score is not None and fed % model.stride == 0:
                scores.append(score)
    model.close()
    return np.array(scores)


def held(scores: np.ndarray, threshold: float) -> int:
    best = run = 0
    for score in scores:
        run = run + 1 if score > threshold else 0
        best = max(best, run)
    return best


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-wake-"))
    piper = PiperSynthesizer(resolve_voice("", folder / "models"), steady=True)
    piper.load()
    whisper = WhisperTranscriber(resolve_hearing_model("", folder / "models"))
    whisper.load()
    result: dict = {"voices": len(VOICES), "words": {}}
    for name, phrase in BUNDLED_WAKE_WORDS.items():
        from pymicro_wakeword import MicroWakeWord, Model

        model_cutoff = float(MicroWakeWord.from_builtin(Model(name)).probability_cutoff)
        positives = []
        for voice in ["piper", *VOICES]:
            for speed in (140, 175) if voice != "piper" else (0,):
                text = f"{phrase}, {TAIL}?"
                audio = resample(piper.synthesize_sync(text), piper.sample_rate, 16_000) if voice == "piper" \
                    else espeak(text, voice, speed, folder)
                positives.append((voice, speed, audio, outputs(name, audio)))
        lines = NEAR_MISSES[name] + [line for other, near in NEAR_MISSES.items() if other != name for line in near[:3]]
        negatives = [(voice, line, outputs(name, espeak(line, voice, 160, folder)))
                     for line in lines + ROOM for voice in VOICES]
        rule = WAKE_RULES[name]
        grid = {}
        for threshold in (0.8, 0.85, 0.9, 0.92, 0.95, 0.97):
            for sustain in (1, 2, 3, 4, 6, 8):
                grid[f"{threshold}x{sustain}"] = [sum(held(p[3], threshold) >= sustain for p in positives),
                                                  sum(held(n[2], threshold) >= sustain for n in negatives)]
        accepted = [p for p in positives if held(p[3], rule.threshold) >= rule.sustain]
        spellings = sorted({whisper.transcribe_sync(np.concatenate([np.zeros(4_000, np.float32), p[2],
                                                                    np.zeros(8_000, np.float32)]))
                            for p in accepted})
        closest = sorted(((held(n[2], rule.threshold), n[0], n[1]) for n in negatives), reverse=True)[:3]
        result["words"][name] = {
            "model_cutoff": model_cutoff, "rule": [rule.threshold, rule.sustain],
            "positives": len(positives), "negatives": len(negatives),
            "old_rule_fires": [sum(held(p[3], model_cutoff) >= 1 for p in positives),
                               sum(held(n[2], model_cutoff) >= 1 for n in negatives)],
            "rule_fires": [len(accepted), sum(held(n[2], rule.threshold) >= rule.sustain for n in negatives)],
            "closest_negatives_held": closest, "grid_positives_negatives": grid,
            "accepted_heard_as": spellings}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
