"""Open speakers in the private PulseAudio: her voice comes back into her microphone.

`Room` adds a three-channel null sink to the private daemon: channel 1 is her voice as it
leaves the speaker, channel 2 the user's voice, channel 3 what her microphone hears (the
user, plus her voice looped back 60 ms later at a set volume, like a laptop's speakers).
Recording channels 1 and 2 is a witness on one audio clock: when the user began, when she
stopped. While the room is up, the default speaker and microphone are hers (room_voice,
room_mic).
"""

from __future__ import annotations

import contextlib
import subprocess
import wave
from pathlib import Path

import numpy as np
from audio_env import RECORD_LATENCY

ROOM_MODULES = (
    "module-null-sink sink_name=room rate=16000 channels=3 "
    "channel_map=front-left,front-right,front-center",
    # Her speaker: the witness's first channel.
    "module-remap-sink sink_name=room_voice master=room channels=1 channel_map=mono "
    "master_channel_map=front-left remix=no",
    # The user's mouth: a mono stream lands on the witness's second channel and in the microphone.
    "module-remap-sink sink_name=room_user master=room channels=2 channel_map=front-left,front-right "
    "master_channel_map=front-right,front-center remix=no",
    # What of her voice reaches the microphone through the air.
    "module-remap-sink sink_name=room_echo master=room channels=1 channel_map=mono "
    "master_channel_map=front-center remix=no",
    "module-remap-source source_name=room_mic master=room.monitor channels=1 channel_map=mono "
    "master_channel_map=front-center remix=no",
)
LOOPBACK = "module-loopback source=room_voice.monitor sink=room_echo latency_msec=60"
ECHO_VOLUMES = {-6: "79%", 0: "100%"}
"""Pulse's volume is cubic: 79 % is 0.5 linear (-6 dB)."""


class Room:
    """The private PulseAudio as a room with open speakers; `echo_db` is her voice's level
    in the microphone relative to the speaker (-6 or 0)."""

    def __init__(self, pulse_audio, *, echo_db: int = -6) -> None:
        self.pulse = pulse_audio
        self.echo_db = echo_db
        self.modules: list[str] = []

    def _pactl(self, *args: str) -> str:
        done = subprocess.run(["pactl", *args], env=self.pulse.client_env(), check=True,
                              capture_output=True, text=True, timeout=10)
        return done.stdout.strip()

    def start(self) -> Room:
        for module in (*ROOM_MODULES, LOOPBACK):
            self.modules.append(self._pactl("load-module", *module.split()))
        self._pactl("set-sink-input-volume", self._loopback_input(), ECHO_VOLUMES[self.echo_db])
        self._pactl("set-default-sink", "room_voice")
        self._pactl("set-default-source", "room_mic")
        return self

    def _loopback_input(self) -> str:
        """The loopback's sink input (the one whose owner module is the loopback)."""
        owner = f"Owner Module: {self.modules[-1]}"
        index = None
        for line in self._pactl("list", "sink-inputs").splitlines():
            line = line.strip()
            if line.startswith("Sink Input #"):
                index = line.removeprefix("Sink Input #")
            elif line == owner and index is not None:
                return index
        raise RuntimeError("the loopback's sink input is not there")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            self._pactl("set-default-sink", "speaker")
            self._pactl("set-default-source", "mic")
        for module in reversed(self.modules):
            with contextlib.suppress(subprocess.SubprocessError):
                self._pactl("unload-module", module)
        self.modules.clear()

    def say(self, wav: Path) -> subprocess.Popen:
        """The user says `wav` (into her microphone, and onto the witness)."""
        return subprocess.Popen(["paplay", "--device=room_user", str(wav)], env=self.pulse.client_env())

    def record(self, wav: Path) -> subprocess.Popen:
        """Start the witness recording; stop it with .send_signal(SIGINT)."""
        return subprocess.Popen(
            ["parecord", "--device=room.monitor", "--rate=16000", "--channels=3", "--format=s16le",
             RECORD_LATENCY, "--file-format=wav", str(wav)], env=self.pulse.client_env())


def read_witness(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(her voice, the user's voice, her microphone) of a witness recording, as float32."""
    with wave.open(str(path), "rb") as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (3, 2, 16_000)
        raw = wav.readframes(wav.getnframes())
    samples = np.frombuffer(raw, dtype="<i2").astype(np.float32).reshape(-1, 3) / 32768.0
    return samples[:, 0], samples[:, 1], samples[:, 2]
