"""Helpers for the end-to-end tests: the window on real audio devices, what the face painted,
what the speaker played (recorded and heard back with Whisper), and fuzzy in-order matching."""

from __future__ import annotations

import contextlib
import difflib
import re
import signal
import subprocess
import time
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.persona.store import shipped_default
from companion.ui.app import CompanionApp
from companion.voice.sound.audio import read_wav, resample

CONTRACTIONS = (("n't", " not"), ("'m", " am"), ("'re", " are"), ("'ll", " will"), ("'ve", " have"),
                ("'s", " is"))
"""Whisper writes "Here's" or "Here is" as it likes; both become "here is" ("'s" as "is" is
wrong for a possessive, but the same on both sides of a comparison)."""


def words(text: str) -> list[str]:
    """Lower-case words without punctuation or contractions, as Whisper's text is compared."""
    text = text.lower().replace("’", "'").replace("-", " ")
    for short, long in CONTRACTIONS:
        text = text.replace(short, long)
    return re.sub(r"[^a-z0-9 ]+", "", text).split()


def find_in_order(heard: str, *phrases: str, min_ratio: float = 0.75) -> list[int]:
    """Where each phrase starts in `heard` (word index), each after the one before.

    Fuzzy: the best window of the phrase's length (give or take a word) must match at least
    `min_ratio` of it (Whisper tiny hears "I'm" as "I am" or drops a small word now and then).
    """
    said = words(heard)
    where, start = [], 0
    for phrase in phrases:
        wanted = words(phrase)
        best, best_at, best_end = 0.0, -1, start
        for at in range(start, len(said)):
            for size in (len(wanted) - 1, len(wanted), len(wanted) + 1):
                window = said[at:at + size]
                ratio = difflib.SequenceMatcher(None, wanted, window, autojunk=False).ratio()
                if ratio > best:
                    best, best_at, best_end = ratio, at, at + size
        assert best >= min_ratio, f"{phrase!r} not heard after word {start} of {heard!r} (best {best:.2f})"
        where.append(best_at)
        start = best_end
    return where


def personality_with_tool_lines(path: Path, tool: str, **lines: str) -> Path:
    """Her shipped personality, with `tool`'s entry in `## Tool voice patterns` replaced."""
    text = shipped_default().read_text(encoding="utf-8")
    entry = f"{tool}:\n" + "".join(f"  {key}: {value}\n" for key, value in lines.items())
    pattern = re.compile(rf"^{re.escape(tool)}:\n(?:[ \t]+.*\n)*", re.MULTILINE)
    assert pattern.search(text), f"the shipped personality has no {tool} entry"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pattern.sub(lambda _m: entry, text, count=1), encoding="utf-8")
    return path


def window_app(tmp_path: Path, brain_url: str, **kwargs) -> CompanionApp:
    """The real window app (with her voice on the default devices), config in tmp_path/config;
    she answers every voice (Always answer), since the tests speak to her without her name."""
    settings = with_overrides(Settings(), brain={"base_url": brain_url},
                              tools={"workspace": str(tmp_path / "workspace")}, voice={"listening": "always"})
    return CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings), **kwargs)


@dataclass(frozen=True)
class Frame:
    at: float
    expression: str
    speech_level: float


class FaceFilm:
    """Every frame the face widget paints: its expression and mouth opening at that moment."""

    def __init__(self, face) -> None:
        self.face = face
        self.frames: list[Frame] = []
        face.painted.connect(self._painted)

    def _painted(self, _shown_at: float) -> None:
        shown = self.face.last_frame
        level = shown.speech_level if shown is not None else 0.0
        self.frames.append(Frame(time.monotonic(), self.face.expression, level))

    def expressions(self, since: float = 0.0) -> list[str]:
        """The expressions painted since `since`, each run of equal frames once."""
        seen: list[str] = []
        for frame in self.frames:
            if frame.at >= since and (not seen or seen[-1] != frame.expression):
                seen.append(frame.expression)
        return seen

    def stop(self) -> None:
        self.face.painted.disconnect(self._painted)


class SpeakerRecording:
    """Records the virtual speaker from start() to stop(); `heard()` is Whisper's transcript."""

    def __init__(self, pulse_audio, path: Path) -> None:
        self.path = path
        self._process = pulse_audio.record_speaker(path)

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
        self._process.wait(10)

    def audio(self) -> np.ndarray:
        samples, rate = read_wav(self.path)
        return resample(samples, rate, 16_000)

    def heard(self, hearing) -> str:
        return heard_parts(hearing, self.audio())


def voiced_spans(audio: np.ndarray, rate: int = 16_000, *, floor: float = 0.003,
                 min_gap_s: float = 0.4) -> list[tuple[float, float]]:
    """(start, end) seconds of each stretch of sound; quieter gaps shorter than `min_gap_s`
    (between words and sentences) are part of it. The virtual devices' silence is all zeros."""
    loud = np.flatnonzero(np.abs(audio) > floor)
    if loud.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(loud) > min_gap_s * rate)
    starts = np.concatenate([[loud[0]], loud[breaks + 1]])
    ends = np.concatenate([loud[breaks], [loud[-1]]])
    return [(float(a) / rate, float(b + 1) / rate) for a, b in zip(starts, ends, strict=True)]


def heard_parts(hearing, audio: np.ndarray, *, min_gap_s: float = 0.4) -> str:
    """Whisper's transcript of each stretch of speech, joined: one clip would let Whisper stop
    early at a sentence cut off mid-word (a barge-in) and miss what follows the silence."""
    pad = int(min(0.2, min_gap_s / 2) * 16_000)
    parts = [hearing.transcribe_sync(audio[max(0, int(a * 16_000) - pad):int(b * 16_000) + pad])
             for a, b in voiced_spans(audio, min_gap_s=min_gap_s)]
    return " ".join(part for part in parts if part)


STAGE_MODULES = (
    # Two channels on one clock: her voice on the left, the user's on the right.
    "module-null-sink sink_name=stage rate=16000 channels=2 channel_map=front-left,front-right",
    "module-remap-sink sink_name=stage_voice master=stage channels=1 channel_map=mono "
    "master_channel_map=front-left remix=no",
    "module-remap-sink sink_name=stage_user master=stage channels=1 channel_map=mono "
    "master_channel_map=front-right remix=no",
    # Her microphone hears the right channel (the user) only, as a headset would.
    "module-remap-source source_name=stage_mic master=stage.monitor channels=1 channel_map=mono "
    "master_channel_map=front-right remix=no",
)


class Stage:
    """The private PulseAudio with a two-channel witness: `record()` captures what she says and
    what the user says in one file, so the time between them is measured on the audio clock.
    While it is up, the default speaker and microphone are hers (stage_voice, stage_mic)."""

    def __init__(self, pulse_audio) -> None:
        self.pulse = pulse_audio
        self.modules: list[str] = []

    def _pactl(self, *args: str) -> str:
        done = subprocess.run(["pactl", *args], env=self.pulse.client_env(), check=True,
                              capture_output=True, text=True, timeout=10)
        return done.stdout.strip()

    def start(self) -> Stage:
        for module in STAGE_MODULES:
            self.modules.append(self._pactl("load-module", *module.split()))
        self._pactl("set-default-sink", "stage_voice")
        self._pactl("set-default-source", "stage_mic")
        return self

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            self._pactl("set-default-sink", "speaker")
            self._pactl("set-default-source", "mic")
        for module in reversed(self.modules):
            with contextlib.suppress(subprocess.SubprocessError):
                self._pactl("unload-module", module)
        self.modules.clear()

    def say(self, wav: Path) -> subprocess.Popen:
        """The user says `wav` (into her microphone, and onto the witness's right channel)."""
        return subprocess.Popen(["paplay", "--device=stage_user", str(wav)], env=self.pulse.client_env())

    def record(self, wav: Path) -> subprocess.Popen:
        return subprocess.Popen(
            ["parecord", "--device=stage.monitor", "--rate=16000", "--channels=2", "--format=s16le",
             "--file-format=wav", str(wav)], env=self.pulse.client_env())


def read_stereo(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(left, right) channels of a 16 kHz 16-bit stereo WAV as float32."""
    with wave.open(str(path), "rb") as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (2, 2, 16_000)
        raw = wav.readframes(wav.getnframes())
    samples = np.frombuffer(raw, dtype="<i2").astype(np.float32).reshape(-1, 2) / 32768.0
    return samples[:, 0], samples[:, 1]


async def flush_speaker(app: CompanionApp) -> None:
    """Half a second of silence pushes the last of her words through PulseAudio's buffers."""
    sink = app.voice.session.sink
    await sink.play(np.zeros(sink.rate // 2, dtype=np.float32), sink.rate)
