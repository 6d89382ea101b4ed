"""Turn-taking as the user hears it: end of speech → her first sound, through a sound server, on one clock.

The real `companion voice` runs as its own process on a private PulseAudio (its microphone the
virtual `mic`, its speaker the virtual `speaker`), at her default settings, with the scripted
brain answering at once. This process plays the questions (espeak-ng voices, none of them hers)
into the microphone's feed and records the speaker's monitor through PortAudio, so both ends
are stamped on one clock: each latency is the first loud 10 ms of her reply (ADC time) minus
the last loud sample of the question (DAC time). Nothing from inside her is used for it; her
own log (each turn's stage breakdown, companion.voice.turns.latency) is printed beside it.
The measuring loop's own delay (a click played to the speaker and heard on its monitor by
this process alone) is measured first and reported, not subtracted.

    .venv/bin/python bench/turn_blackbox.py [--hog] [--rounds 2] [--pace laptop-3b]
        [--program pipecat-vad|pipecat-smart-turn --pipecat-python /work/pipecat-venv/bin/python]

`--hog` keeps one core busy (a Python busy loop, tests/helpers/cpu_hog.py's) while she talks.
`--pace laptop-3b` has the scripted brain answer at tests/helpers/brain_pace.py's profile of a
3 B model on a laptop CPU (its prefix cache modelled as llama.cpp's) instead of at once, with
PACED_GAP_S after each question; her first sound is then often her thinking line, and the
figures for turns 2 on are given apart (turn 1 waits behind the cold server's warm-up).
`--program` runs bench/pipecat/bot.py (pipecat 1.14 on her Whisper and voice files, VAD-only or
with Smart Turn v3) in her place, on the same probe; its log is pipecat's own (no stages).
Prints one JSON object, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))
sys.path.insert(0, str(ROOT))

from audio_env import sound_server  # noqa: E402
from brain_pace import PROFILES  # noqa: E402
from scripted_brain import ScriptedBrain  # noqa: E402

from companion.voice.models.files import resolve_hearing_model, resolve_voice  # noqa: E402
from companion.voice.sound.audio import read_wav, resample  # noqa: E402

RATE = 16_000
BLOCK = 640
"""40 ms blocks at high latency: a busy 2-core machine underruns smaller ones (ARCHITECTURE)."""
PIECE = 160
LOUD = 0.01
GAP_S = 4.5
"""Silence after each question: her patience (2 s) and her reply, with room to spare."""
PACED_GAP_S = 9.0
"""With a paced brain: its prompt evaluation and its slow writing (~1 s for the reply) too."""
REPLY = "Sure, I can help with that."
QUESTIONS = (
    ("What time is it in Tokyo?", "en-us"),
    ("Could you turn the lights off?", "en-gb"),
    ("Tell me something interesting about octopuses.", "en-us+f3"),
    ("How long does it take to boil an egg?", "en-gb-scotland"),
    ("What is on my calendar tomorrow?", "en-us+m3"),
    ("Please remind me to water the plants.", "en-029"),
    ("Why is the sky blue?", "en-gb-x-rp"),
    ("Can you recommend a good book?", "en-us-nyc"),
    ("How do I say thank you in Japanese?", "en-gb-x-gbcwmd"),
    ("Add milk to my shopping list.", "en-gb-x-gbclan"),
    ("Good morning, how are you today?", "en-us+f2"),
    ("What is the tallest mountain in Africa?", "en-us"),
)
STAGE = re.compile(r"(\w+)=(\d+)ms")
PROGRAMS = ("companion", "pipecat-vad", "pipecat-smart-turn")


def say(text: str, voice: str, scratch: Path) -> np.ndarray:
    wav = scratch / "say.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", "160", "-w", str(wav), text], check=True, timeout=30)
    audio, rate = read_wav(wav)
    audio = resample(audio, rate, RATE)
    loud = np.flatnonzero(np.abs(audio) > LOUD)
    return audio[loud[0]:loud[-1] + 1]


class Stage:
    """Plays one buffer into the microphone's feed while recording the speaker's monitor, keeping
    PortAudio's DAC and ADC stamps of every block (separate streams on one clock: a duplex
    stream stalls on ALSA over pulse)."""

    def __init__(self, audio: np.ndarray) -> None:
        self.audio = audio
        self.position = 0
        self.played: list[tuple[float, int]] = []
        self.heard: list[tuple[float, np.ndarray]] = []
        self.offsets: list[float] = []
        """time.monotonic() minus PortAudio's clock, at each recorded block."""
        self.done = threading.Event()

    def _play(self, outdata, frames, stamps, _status) -> None:
        chunk = self.audio[self.position:self.position + frames]
        outdata[:] = 0
        outdata[:chunk.size, 0] = chunk
        self.played.append((stamps.outputBufferDacTime, self.position))
        self.position += frames
        if self.position >= self.audio.size:
            self.done.set()

    def _record(self, indata, _frames, stamps, _status) -> None:
        self.heard.append((stamps.inputBufferAdcTime, indata[:, 0].copy()))
        self.offsets.append(time.monotonic() - stamps.currentTime)

    def from_monotonic(self, when: float) -> float:
        """A time.monotonic() time of this process on PortAudio's clock."""
        return when - statistics.median(self.offsets)

    def run(self, sink: str, source: str, *, after_s: float = 0.5) -> None:
        import sounddevice as sd

        os.environ["PULSE_SINK"], os.environ["PULSE_SOURCE"] = sink, source
        options = {"samplerate": RATE, "blocksize": BLOCK, "latency": "high", "channels": 1, "dtype": "float32"}
        with sd.InputStream(callback=self._record, **options), sd.OutputStream(callback=self._play, **options):
            self.done.wait(self.audio.size / RATE + 60)
            time.sleep(after_s)  # the last reply's tail, still in the server's buffers

    def dac_time(self, sample: int) -> float:
        """When sample `sample` of the buffer left for the speaker, on PortAudio's clock."""
        for dac, start in reversed(self.played):
            if start <= sample:
                return dac + (sample - start) / RATE
        raise ValueError("sample never played")

    def first_sound(self, after: float, before: float) -> float | None:
        """ADC time of the first loud 10 ms piece recorded in (after, before)."""
        for adc, block in self.heard:
            for k in range(0, block.size - PIECE + 1, PIECE):
                when = adc + k / RATE
                if after < when < before and np.sqrt(np.mean(block[k:k + PIECE] ** 2)) > LOUD:
                    return when
        return None


def self_loop_ms(pulse) -> float:
    """The measuring loop's own delay: clicks played to the speaker, heard on its monitor."""
    click = np.zeros(int(RATE * 0.5), np.float32)
    click[:160] = 0.5
    stage = Stage(np.concatenate([np.zeros(RATE // 2, np.float32), *([click] * 4)]))
    stage.run("speaker", "speaker.monitor")
    delays = []
    for index in range(4):
        start = RATE // 2 + index * click.size
        played = stage.dac_time(start)
        heard = stage.first_sound(played - 0.05, played + 0.45)
        if heard is not None:
            delays.append((heard - played) * 1000)
    return round(statistics.median(delays), 1) if delays else None


def stages(log: str) -> list[dict]:
    turns = []
    for line in log.splitlines():
        if "turn latency (" in line:
            summary = line.split("): ", 1)[-1]
            synth = re.search(r"first fragment (['\"])(.*)\1 in (\d+)ms;", summary)
            turns.append({"heard": line.split("turn latency (", 1)[1].split(", early transcript")[0],
                          "checks": summary.split("; ", 1)[0].removeprefix("turn checks: "),
                          **({"first_fragment": synth.group(2), "first_fragment_synth": int(synth.group(3))} if synth else {}),
                          **{name: int(ms) for name, ms in STAGE.findall(summary.rsplit("; ", 1)[-1])}})
    return turns


def percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.array(values), q)), 1)


def command(program: str, brain_url: str, folder: Path, pipecat_python: Path, model: str = "scripted") -> list[str]:
    """The voice program to measure, at its defaults, on the scripted brain (or `model` at `brain_url`)."""
    if program == "companion":
        return [str(Path(sys.executable).with_name("companion")), "voice", "--brain-url", brain_url, "--model", model,
                "--config-dir", str(folder / "cfg"), "--workspace", str(folder / "ws"), "--listening", "always"]
    # Her installed model files, so both hear with the same Whisper and speak with the same voice.
    hearing, voice = resolve_hearing_model("", folder / "cache"), resolve_voice("", folder / "cache")
    return [str(pipecat_python), str(ROOT / "bench" / "pipecat" / "bot.py"), "--turn", program.removeprefix("pipecat-"),
            "--brain-url", brain_url, "--whisper-model", str(hearing.path), "--voice", str(voice.onnx)]


def script(lines, gap_s: float, folder: Path) -> tuple[np.ndarray, list[int], list[int]]:
    """The user's side: 1 s of silence, then each (text, voice) line followed by `gap_s` of
    silence; with each line's first and last sample."""
    pieces, starts, ends, position = [np.zeros(RATE, np.float32)], [], [], RATE
    for text, voice in lines:
        audio = say(text, voice, folder)
        pieces += [audio, np.zeros(int(gap_s * RATE), np.float32)]
        starts.append(position)
        ends.append(position + audio.size)
        position += audio.size + int(gap_s * RATE)
    return np.concatenate(pieces), starts, ends


def converse(cmd: list[str], pulse, user: np.ndarray, log_path: Path, *, hog: bool = False,
             ready=None, after_s: float = GAP_S) -> Stage:
    """Run `cmd` (her, or another voice program) on the private sound server, wait for it to say
    "Listening" (and for `ready()`, when given, to be true), play `user` into its microphone
    while recording its speaker, then stop it."""
    env = {**pulse.client_env(), "PULSE_SINK": "speaker", "PULSE_SOURCE": "mic", "PYTHONUNBUFFERED": "1"}
    with log_path.open("w") as log:
        her = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if hog else None
    try:
        deadline = time.monotonic() + 300
        while "Listening" not in log_path.read_text() or (ready is not None and not ready()):
            # Another process: nothing to wait on but what it prints.
            if her.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{cmd[0]} did not start:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.1)
        time.sleep(1.0)  # her streams' first callbacks
        stage = Stage(user)
        stage.run("micfeed", "speaker.monitor", after_s=after_s)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
        her.terminate()
        try:
            her.wait(15)
        except subprocess.TimeoutExpired:
            her.kill()
            her.wait()
    return stage


def her_log(folder: Path) -> str:
    """Her own log (every record at INFO, beside her data in a --config-dir profile)."""
    return "".join(path.read_text() for path in sorted((folder / "cfg").rglob("companion.log*")))


def first_sounds(stage: Stage, ends: list[int], starts: list[int] | None = None) -> list[float | None]:
    """Per line, ms from its end to her first sound before the next line (its start when
    `starts` is given, else 3 s before the next line's end)."""
    each = []
    for index, end in enumerate(ends):
        spoken = stage.dac_time(end)
        if index + 1 == len(ends):
            next_start = float("inf")
        elif starts is not None:
            next_start = stage.dac_time(starts[index + 1])
        else:
            next_start = stage.dac_time(ends[index + 1] - 1) - 3.0
        heard = stage.first_sound(spoken + 0.05, next_start)
        each.append(None if heard is None else round((heard - spoken) * 1000, 1))
    return each


def median_stages(turns: list[dict]) -> dict:
    return {name: round(statistics.median(t[name] for t in turns if name in t))
            for name in ("end_of_speech_wait", "first_fragment_synth", "transcription", "brain_first_token",
                         "first_sentence_synthesized", "first_audio_out", "total") if any(name in t for t in turns)}


def measure(rounds: int, hog: bool, keep: Path | None = None, program: str = "companion",
            pipecat_python: Path = Path("/work/pipecat-venv/bin/python"), pace: str | None = None) -> dict:
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) if keep is None else keep
        folder.mkdir(parents=True, exist_ok=True)
        gap_s = PACED_GAP_S if pace else GAP_S
        user, _starts, ends = script(QUESTIONS * rounds, gap_s, folder)
        brain = ScriptedBrain(fallback={"text": REPLY}, pace=PROFILES[pace] if pace else None)
        with sound_server(folder / "pulse") as pulse, brain:
            loop_ms = self_loop_ms(pulse)
            stage = converse(command(program, brain.url, folder, pipecat_python), pulse, user, folder / "her.log",
                             hog=hog, after_s=gap_s)
            log_text = her_log(folder)
            brain_requests = len(brain.requests)
    each = first_sounds(stage, ends)
    measured = [x for x in each if x is not None]
    turns = stages(log_text)
    later = [x for x in each[1:] if x is not None]
    return {
        "program": program, "brain_pace": PROFILES[pace].name if pace else "instant",
        "load_average_before": load_before, "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "busy_core": hog, "questions": len(ends), "answered": len(measured), "heard_by_her": len(turns),
        "brain_requests": brain_requests,
        "measuring_loop_ms": loop_ms,
        "speech_end_to_first_audio_ms": {
            "median": round(statistics.median(measured), 1) if measured else None,
            "p95": percentile(measured, 95) if measured else None,
            "min": min(measured, default=None), "max": max(measured, default=None), "each": each},
        "turns_2_on_ms": {"median": round(statistics.median(later), 1) if later else None,
                          "p95": percentile(later, 95) if later else None},
        "her_stages_ms_median": median_stages(turns),
        "her_turns": turns,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hog", action="store_true", help="keep one core busy while she talks")
    parser.add_argument("--rounds", type=int, default=1, help="times through the 12 questions")
    parser.add_argument("--keep", type=Path, help="a folder to keep her settings, log and the audio in")
    parser.add_argument("--program", choices=PROGRAMS, default="companion",
                        help="her, or bench/pipecat/bot.py VAD-only or with Smart Turn v3")
    parser.add_argument("--pipecat-python", type=Path, default=Path("/work/pipecat-venv/bin/python"),
                        help="the python of the venv made from bench/pipecat/requirements.txt")
    parser.add_argument("--pace", choices=sorted(PROFILES), help="the scripted brain at a local model's pace")
    args = parser.parse_args()
    print(json.dumps(measure(args.rounds, args.hog, args.keep, args.program, args.pipecat_python, args.pace)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
