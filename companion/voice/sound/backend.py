"""Which way her sound goes: straight to the sound server ("pulse") or through PortAudio.

"auto" (the default) takes the sound server when libpulse is installed and a PulseAudio or
PipeWire-pulse server answers; otherwise PortAudio (ALSA only, no server running, other
platforms). The setting `voice.sound_backend` forces one. `companion doctor` and Settings →
Voice say which is in use and why.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AUTO", "BACKENDS", "PORTAUDIO", "PULSE", "SoundBackend", "choose"]

AUTO, PULSE, PORTAUDIO = "auto", "pulse", "portaudio"
BACKENDS = (AUTO, PULSE, PORTAUDIO)
LABELS = {PULSE: "the sound server (PulseAudio/PipeWire) directly", PORTAUDIO: "PortAudio (through ALSA)"}


@dataclass(frozen=True)
class SoundBackend:
    """The path chosen and a sentence saying why."""

    name: str
    """PULSE or PORTAUDIO."""
    why: str
    available: bool = True
    """False when the server was forced in the settings but does not answer."""

    @property
    def label(self) -> str:
        return LABELS[self.name]

    def sentence(self) -> str:
        return f"Sound goes through {self.label}: {self.why}."


def choose(setting: str = AUTO, *, timeout_s: float = 1.0) -> SoundBackend:
    """The backend for `setting` (blocking up to `timeout_s` while a server is asked)."""
    if setting == PORTAUDIO:
        return SoundBackend(PORTAUDIO, "chosen in the settings")
    from companion.voice.sound.pulse import PulseError, server_info

    try:
        server = server_info(timeout_s)
    except PulseError as exc:
        if setting == PULSE:
            return SoundBackend(PULSE, f"chosen in the settings, though {exc}", available=False)
        return SoundBackend(PORTAUDIO, f"{exc}")
    return SoundBackend(PULSE, "chosen in the settings" if setting == PULSE else f"{server} answers")
