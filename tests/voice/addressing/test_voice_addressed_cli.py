"""`companion listen --listening called` and `companion voice` for the listening mode, as a user
runs them (`companion doctor`'s line for it: tests/commands/test_doctor.py)."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
from audio_env import espeak_wav, without_the_words_model

from companion.commands.voice import ready_line
from companion.config import VoiceSettings
from companion.voice.sound.audio import read_wav, write_wav


def listen(tmp_path, brain_url: str, wav, *args: str) -> subprocess.CompletedProcess:
    """`companion listen` over `wav`. Who may call her is the point here, not where her turns end:
    without the words' turn model each run is ~4 s of processor cheaper (audio_env)."""
    return subprocess.run([sys.executable, "-m", "companion.cli", "listen", "--config-dir", str(tmp_path / "config"),
                           "--workspace", str(tmp_path / "ws"), "--brain-url", brain_url, "--model", "scripted",
                           "--in", str(wav), "--out", str(tmp_path / "out.wav"), *args],
                          capture_output=True, text=True, timeout=180, env=without_the_words_model())


def test_listen_when_called_answers_nothing_to_voices_that_do_not_call_her(tmp_path, scripted_brain):
    room = espeak_wav(tmp_path / "room.wav", "Did you see the game last night? I think the bus leaves at six.")
    done = listen(tmp_path, scripted_brain.url, room, "--listening", "called")
    assert done.returncode == 0, done.stderr
    assert "[heard]" not in done.stdout
    assert "nobody called me in that file (called mode)" in done.stderr
    assert "or run with --listening always." in done.stderr  # what to do about it
    assert scripted_brain.requests == []


def test_listen_when_called_answers_her_name_with_the_shipped_personality(tmp_path, scripted_brain):
    scripted_brain.push({"text": "Paris."})
    room, _ = read_wav(espeak_wav(tmp_path / "room.wav", "Did you see the game last night?"))
    question, rate = read_wav(espeak_wav(tmp_path / "q.wav", "Mira, what is the capital of France?"))
    both = tmp_path / "both.wav"
    write_wav(both, np.concatenate([room, np.zeros(rate * 2, dtype=np.float32), question]), rate)
    done = listen(tmp_path, scripted_brain.url, both, "--listening", "called")
    assert done.returncode == 0, done.stderr
    heard = [line for line in done.stdout.splitlines() if line.startswith("[heard]")]
    assert len(heard) == 1 and "capital" in heard[0].lower()
    assert len(scripted_brain.requests) == 1


def ready(tmp_path, brain_url: str, env: dict[str, str], *args: str) -> str:
    """`companion voice` on the private PulseAudio until her ready line (then it is stopped)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "companion.cli", "voice", "--config-dir", str(tmp_path / "config"),
         "--workspace", str(tmp_path / "ws"), "--brain-url", brain_url, "--model", "scripted", *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    watchdog = threading.Timer(120, process.kill)  # a hang fails the test instead of the suite
    watchdog.start()
    try:
        return next((line for line in process.stdout if line.startswith(("Listening", "Type", "My "))), "").strip()
    finally:
        watchdog.cancel()
        process.kill()
        process.wait(30)


def test_companion_voice_says_how_to_call_her_and_answers_every_voice_only_when_asked(
        tmp_path, scripted_brain, pulse_audio):
    line = ready(tmp_path, scripted_brain.url, pulse_audio.client_env())
    assert line == ("Listening when called: start with \u201cMira\u201d or \u201cOkay Nabu\u201d "
                    "(--listening always answers every voice). Or type and press Enter. Ctrl-C quits.")
    line = ready(tmp_path, scripted_brain.url, pulse_audio.client_env(), "--listening", "always")
    assert line == "Listening. Speak, or type and press Enter. Ctrl-C quits."


def test_the_ready_line_follows_the_mode_the_wake_word_and_her_name():
    jarvis = VoiceSettings(wake_word="hey_jarvis", name_wakes=False)
    assert "start with \u201cHey Jarvis\u201d (" in ready_line(jarvis, ("Mira",), microphone=True)
    assert ready_line(VoiceSettings(muted=True), (), microphone=True).startswith("My microphone is muted")
    assert ready_line(VoiceSettings(), ("Mira",), microphone=False) == "Type to me and press Enter. Ctrl-C quits."
