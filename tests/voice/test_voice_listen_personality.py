"""`companion listen --personality F` answers in F's own voice: Mira in hibari's heart (a woman),
Jeeves slower and lower than Joe, Pip quicker and higher; each reply is heard back word for word
(issue 54). Before, listen built her voice from Settings alone: all three were Joe at one pace."""

from __future__ import annotations

import json
import re
from pathlib import Path

from audio_env import espeak_wav, synthesized, without_the_words_model
from test_voice_listen import listen
from voice_pitch import median_pitch_hz, word_error_rate

from companion.voice.sound.audio import read_wav, resample

ROOT = Path(__file__).resolve().parents[2]
REPLY = "Of course. I will remind you to call your sister tomorrow evening after dinner."
FILES = {"Mira": "default.md", "Jeeves": "butler.md", "Pip": "gremlin.md"}


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).split()


def _reply(audio):
    """Her reply without the silence around it (the answer file starts with the question's length)."""
    loud = (abs(audio) > 0.01).nonzero()[0]
    return audio[loud[0]:loud[-1] + 1]


def test_listen_with_a_personality_answers_in_that_personalitys_own_voice(
        tmp_path, scripted_brain, hearing, piper_voice):
    question = espeak_wav(tmp_path / "question.wav", "Please remind me to call my sister.")
    measured = {}
    for name, file in FILES.items():
        scripted_brain.push({"text": REPLY})
        answer = tmp_path / f"{name}.wav"
        config = tmp_path / name / "config"
        config.mkdir(parents=True)
        # Her names are not what is tested: without learning how they are heard, each run is ~2 s cheaper;
        # nor where her turn ends (one question): without the words' model, ~4 s cheaper.
        (config / "settings.toml").write_text("[voice]\nname_wakes = false\n")
        done = listen(tmp_path / name, scripted_brain.url, "--personality", str(ROOT / "personality" / file),
                      "--in", str(question), "--out", str(answer), env=without_the_words_model())
        assert done.returncode == 0, done.stderr
        audio, rate = read_wav(answer)
        reply = _reply(audio)
        heard = hearing.transcribe_sync(resample(reply, rate, 16_000))
        measured[name] = {"seconds": reply.size / rate, "pitch_hz": median_pitch_hz(reply, rate),
                          "wer": word_error_rate(_words(REPLY), _words(heard)), "heard": heard}
    joe = synthesized(piper_voice, REPLY)
    measured["Joe"] = {"seconds": joe.size / piper_voice.sample_rate,
                       "pitch_hz": median_pitch_hz(joe, piper_voice.sample_rate)}
    print(json.dumps(measured))
    for name in FILES:
        assert measured[name]["wer"] <= 0.10, measured
    # Measured: Joe ~90 Hz; Mira (hibari's heart) ~200, Jeeves (-2 semitones) ~80, Pip (+4) ~113.
    assert measured["Mira"]["pitch_hz"] > 1.6 * measured["Joe"]["pitch_hz"], measured
    assert measured["Jeeves"]["pitch_hz"] < 0.95 * measured["Joe"]["pitch_hz"], measured
    assert measured["Pip"]["pitch_hz"] > 1.15 * measured["Joe"]["pitch_hz"], measured
    # speed 0.9 against 1.15: Jeeves takes ~28 % longer to say the same words.
    assert measured["Jeeves"]["seconds"] > 1.15 * measured["Pip"]["seconds"], measured
