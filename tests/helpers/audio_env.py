"""Test audio: a private PulseAudio with virtual speaker and microphone, and shared real models.

The PulseAudio daemon loads a null sink `speaker` (what she says; record `speaker.monitor`)
and a null sink `micfeed` remapped as the source `mic` (play a WAV into `micfeed` and she
hears it). PortAudio lists devices when it initialises, so the fixture re-initialises
sounddevice after pointing PULSE_SERVER at the private daemon, and again when it stops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import subprocess
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from companion.voice.hearing.stt import WhisperTranscriber
from companion.voice.models.files import resolve_hearing_model, resolve_voice
from companion.voice.sound.audio import resample, write_wav
from companion.voice.speaking.tts import PiperSynthesizer

PULSE_CONFIG = """\
load-module module-native-protocol-unix auth-anonymous=1 socket={socket}
load-module module-null-sink sink_name=speaker rate=22050 channels=1
load-module module-null-sink sink_name=micfeed rate=16000 channels=1
load-module module-remap-source source_name=mic master=micfeed.monitor channels=1
set-default-sink speaker
set-default-source mic
"""


RECORD_LATENCY = "--latency-msec=50"
"""parecord at its default latency got its audio in ~2 s fragments (nothing on disk for the
first 1.75 s here), so a recording stopped soon after she fell quiet could miss her last words
("she did not finish"); in 50 ms fragments the file keeps up, and wait_until_recorded can tell."""


def recorded_s(wav: Path, *, channels: int = 1, rate: int = 16_000) -> float:
    """Seconds of 16-bit audio a recorder has written to `wav` so far (its header not yet final)."""
    try:
        size = wav.stat().st_size
    except FileNotFoundError:
        return 0.0
    return max(0, size - 44) / (2 * channels) / rate


def wait_until_recorded(wav: Path, seconds: float, *, channels: int = 1, timeout_s: float = 30.0) -> None:
    """Until the recorder writing `wav` has written `seconds` of audio (blocking: call in a thread).
    A recorder started at t0 and `seconds` long covers everything played before t0 + seconds."""
    deadline = time.monotonic() + timeout_s
    while recorded_s(wav, channels=channels) < seconds:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{wav.name}: only {recorded_s(wav, channels=channels):.2f} of {seconds:.2f} s recorded")
        time.sleep(0.02)  # another process's progress on disk: nothing to wait on but the file


class PrivatePulseAudio:
    """A PulseAudio daemon of our own in `folder`; `env` is what a client process needs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.socket = folder / "native"
        self.runtime = folder / "runtime"
        self.env = {
            "PULSE_SERVER": f"unix:{self.socket}",
            "PULSE_RUNTIME_PATH": str(self.runtime),
            "PULSE_STATE_PATH": str(folder / "state"),
            "PULSE_CONFIG_PATH": str(folder / "config"),
        }
        self.process: subprocess.Popen | None = None

    def start(self) -> PrivatePulseAudio:
        for name in ("runtime", "state", "config"):
            (self.folder / name).mkdir(parents=True, exist_ok=True)
        config = self.folder / "private.pa"
        config.write_text(PULSE_CONFIG.format(socket=self.socket))
        env = {**os.environ, **self.env, "HOME": str(self.folder)}
        log = self.folder / "pulseaudio.log"
        # Not daemonized: a child that dies with us, so a killed test run leaves no daemon behind.
        # Its own log (errors and warnings) says why, should it not come up.
        with log.open("ab") as log_file:
            self.process = subprocess.Popen(
                ["pulseaudio", "-n", "-F", str(config), "--daemonize=no", "--exit-idle-time=-1",
                 "--log-target=stderr", "--log-level=warning", "--log-time=1"],
                env=env, stdout=subprocess.DEVNULL, stderr=log_file, preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + 30
        while subprocess.run(["pactl", "info"], env=env, capture_output=True, timeout=10).returncode != 0:
            # The daemon is an outside program with no readiness signal: ask until it answers.
            if self.process.poll() is not None or time.monotonic() > deadline:
                code = self.process.poll()
                self.stop()
                said = log.read_text(errors="replace").strip().splitlines()[-8:]
                raise RuntimeError(f"the private PulseAudio did not start (exit {code}): " + " | ".join(said))
            time.sleep(0.05)
        return self

    def client_env(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def play_into_mic(self, wav: Path) -> subprocess.Popen:
        """Start playing `wav` into the virtual microphone (returns the paplay process)."""
        return subprocess.Popen(["paplay", "--device=micfeed", str(wav)], env=self.client_env())

    def record_speaker(self, wav: Path, *, device: str = "speaker.monitor") -> subprocess.Popen:
        """Start recording the virtual speaker (or `device`) to `wav`; stop it with .send_signal(SIGINT)."""
        return subprocess.Popen(
            ["parecord", f"--device={device}", "--rate=16000", "--channels=1", RECORD_LATENCY,
             "--format=s16le", "--file-format=wav", str(wav)], env=self.client_env(),
        )

    def pactl(self, *args: str) -> str:
        """A pactl command on this daemon; its output."""
        done = subprocess.run(["pactl", *args], env=self.client_env(), check=True, capture_output=True,
                              text=True, timeout=10)
        return done.stdout.strip()

    def kill(self) -> None:
        """The daemon dies as in a crash (SIGKILL: no goodbye to its clients); start() brings
        a new one up on the same socket, as a desktop's session manager would."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def stall(self) -> None:
        """The daemon stops answering (SIGSTOP), as a hung server does; resume() lets it go on."""
        if self.process is not None:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        self.resume()  # a stalled daemon would not see SIGTERM
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def _die_with_parent() -> None:
    """In the child before exec: ask Linux to SIGTERM it when the test process dies."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def reinitialise_sounddevice() -> None:
    """Make PortAudio list devices again (it reads the sound server only when it initialises)."""
    import sounddevice

    sounddevice._terminate()
    sounddevice._initialize()


@contextmanager
def sound_server(folder: Path) -> Iterator[PrivatePulseAudio]:
    """A private PulseAudio in `folder`, with this process (and PortAudio) pointed at it while
    it runs; the environment and PortAudio's device list are put back afterwards."""
    pulse = PrivatePulseAudio(folder).start()
    saved = {name: os.environ.get(name) for name in pulse.env}
    os.environ.update(pulse.env)
    reinitialise_sounddevice()
    try:
        yield pulse
    finally:
        pulse.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reinitialise_sounddevice()


@pytest.fixture(scope="session")
def pulse_audio(tmp_path_factory):
    """The private PulseAudio, with this process's environment pointing at it while it runs."""
    if shutil.which("pulseaudio") is None:
        pytest.fail("pulseaudio is not installed: run `make system-deps` (scripts/system-deps.sh)")
    with sound_server(tmp_path_factory.mktemp("pulse")) as pulse:
        yield pulse


@pytest.fixture(scope="session")
def whisper_tiny(tmp_path_factory) -> WhisperTranscriber:
    """The installed Whisper tiny.en, loaded and warmed once per test session."""
    transcriber = WhisperTranscriber(resolve_hearing_model("", tmp_path_factory.mktemp("models")))
    transcriber.load()
    return transcriber


@pytest.fixture
def hearing(whisper_tiny) -> Iterator[WhisperTranscriber]:
    """Whisper tiny.en, told no names at the start of each test (a session in When called
    tells it hers: voice.addressing.learning.hint_names)."""
    whisper_tiny.call_names = ()
    yield whisper_tiny
    whisper_tiny.call_names = ()


class KeptPiper(PiperSynthesizer):
    """A steady piper voice whose audio for a text at a speed is made once per test process.

    Her replies repeat across tests ("Paris.", her thinking lines), and steady they are the same
    audio every time: saying them again was ~45 % of piper's processor in the pure pass. Each
    text still goes through her voice's threads, lock and count; only the network's second run
    of the same input is skipped."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._made: dict[tuple, np.ndarray] = {}

    def _render(self, text: str, speed: float) -> np.ndarray:
        key = (text, speed, tuple(self.variation))
        if key not in self._made:
            self._made[key] = super()._render(text, speed)
        return self._made[key].copy()


@pytest.fixture(scope="session")
def piper_voice(tmp_path_factory) -> PiperSynthesizer:
    """The installed piper voice (joe-medium), loaded once per test session, without sampling noise."""
    # Steady (no sampling noise): test speech and her answers are the same on every run.
    synthesizer = KeptPiper(resolve_voice("", tmp_path_factory.mktemp("models")), steady=True)
    synthesizer.load()
    return synthesizer


@pytest.fixture(scope="session", name="hibari_voice")
def hibari_voice_fixture(tmp_path_factory):
    """hibari's heart (Mira's voice) from the installed hibari-tts, loaded once per test session,
    its noise seeded (the same text gives the same audio). Import it where it is used."""
    from companion.voice.speaking.local import local_synthesizer

    synthesizer = local_synthesizer(resolve_voice("hibari/heart", tmp_path_factory.mktemp("models")), steady=True)
    synthesizer.load()
    return synthesizer


def without_the_words_model(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a `companion` process whose point is not where a turn ends, with the
    words' turn model (SmolLM2) pointed at nothing: she goes on without it (Smart Turn and the
    silence end her turns), as when it is not installed. Loading it costs ~0.7 s of processor in
    every such process once it is kept converted in the cache folder (text_model/stored.py; ~5 s
    the first time)."""
    from companion.voice.turns.text_turn import PATH_VARIABLE

    return {**(os.environ if env is None else env), PATH_VARIABLE: "/nonexistent/words-turn-model.gguf"}


@pytest.fixture(scope="session")
def turn_model():
    """Smart Turn v3 from the installed pack, verified and loaded once per test session."""
    from companion.voice.turns.smart_turn import SmartTurn, resolve_turn_model

    model = SmartTurn(resolve_turn_model())
    model.load()
    return model


_SPOKEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def synthesized(synth, text: str) -> np.ndarray:
    """`text` in `synth`'s voice at its own rate, as synthesize_sync gives it, read-only.

    A steady voice (no sampling noise) gives the same audio for the same text, speed and pitch,
    so test speech is made once per process and handed out again: the same questions were
    synthesized dozens of times a run. Read-only, so no test can change what another hears; a
    voice with sampling noise is synthesized afresh every time."""
    if not getattr(synth, "steady", False):
        return synth.synthesize_sync(text)
    made = _SPOKEN.setdefault(synth, {})
    key = ("own", text, synth.speed, synth.pitch, synth.variation)
    if key not in made:
        audio = synth.synthesize_sync(text)
        audio.flags.writeable = False
        made[key] = audio
    return made[key]


def spoken(synth, text: str) -> np.ndarray:
    """`text` in `synth`'s voice resampled to 16 kHz (the microphone's rate), read-only and made
    once per process for a steady voice (synthesized)."""
    if not getattr(synth, "steady", False):
        return resample(synth.synthesize_sync(text), synth.sample_rate, 16_000)
    made = _SPOKEN.setdefault(synth, {})
    key = ("16k", text, synth.speed, synth.pitch, synth.variation)
    if key not in made:
        audio = np.array(resample(synthesized(synth, text), synth.sample_rate, 16_000), dtype=np.float32)
        audio.flags.writeable = False
        made[key] = audio
    return made[key]


def speech(synth: PiperSynthesizer, *parts: str | float, lead_s: float = 0.5, tail_s: float = 0.0) -> np.ndarray:
    """Piper speech at 16 kHz: strings are spoken, numbers are seconds of silence between."""
    pieces = [np.zeros(int(lead_s * 16_000), dtype=np.float32)]
    for part in parts:
        if isinstance(part, str):
            pieces.append(spoken(synth, part))
        else:
            pieces.append(np.zeros(int(part * 16_000), dtype=np.float32))
    pieces.append(np.zeros(int(tail_s * 16_000), dtype=np.float32))
    return np.concatenate(pieces)


def speech_wav(path: Path, synth: PiperSynthesizer, *parts: str | float, **kwargs) -> Path:
    write_wav(path, speech(synth, *parts, **kwargs), 16_000)
    return path


def espeak_wav(path: Path, text: str) -> Path:
    """A second, different voice for test speech (espeak-ng)."""
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(path), text], check=True, timeout=30)
    return path




SOUND_BACKENDS = ("pulse", "portaudio")
"""Her two sound paths (companion.voice.sound.backend): tests of the devices run on both."""


def device_classes(backend: str) -> tuple[type, type]:
    """(microphone class, speaker class) of a sound path."""
    if backend == "pulse":
        from companion.voice.sound.pulse_devices import PulseSink, PulseSource

        return PulseSource, PulseSink
    from companion.voice.sound.devices import DeviceSink, DeviceSource

    return DeviceSource, DeviceSink
