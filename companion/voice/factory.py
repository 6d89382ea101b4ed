"""The one place her voice is assembled from VoiceSettings: VAD, turn model, hearing, speaking, devices.

Every front-end (`companion voice`, `companion listen`, the window) calls `build_voice`; a new
engine is one module plus one branch in `make_transcriber` / `make_synthesizer`, the engine
selection point (`voice.hearing` / `voice.speaking`: "local" or "tcp://host:port").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from companion.config import VoiceSettings
from companion.errors import CompanionError, Stage
from companion.events import EventBus
from companion.memory import release_free_memory
from companion.voice.fallback import open_hearing, open_voice
from companion.voice.hearing.local import local_transcriber
from companion.voice.hearing.stt import Transcriber
from companion.voice.hearing.vad import SileroVad, SkipQuiet, SpeechDetector
from companion.voice.models.download import Progress
from companion.voice.models.files import resolve_hearing_model
from companion.voice.sound.audio import AudioSink, AudioSource, NullSink, NullSource
from companion.voice.sound.echo_canceller import EchoSettings
from companion.voice.sound.echo_worker import EchoWorker
from companion.voice.speaking.local import load_voice
from companion.voice.speaking.tts import Synthesizer
from companion.voice.turns.smart_turn import SmartTurn, load_turn_model

__all__ = ["VoiceParts", "build_voice", "load_engines", "load_turn_model_or_none", "make_synthesizer", "make_transcriber", "make_vad", "open_devices"]

log = logging.getLogger(__name__)

LOCAL = "local"
"""The engine on this computer (Whisper; piper or hibari); anything else is a tcp://host:port server."""


@dataclass
class VoiceParts:
    """Everything a voice session runs on. `notices` say what did not work (in sentences)."""

    vad: SpeechDetector
    transcriber: Transcriber
    synthesizer: Synthesizer
    source: AudioSource
    sink: AudioSink
    listening: bool
    """The source is a real microphone (not NullSource)."""
    turn_model: SmartTurn | None = None
    """Smart Turn (semantic end of turn), or None: a fixed silence then ends each turn."""
    notices: list[str] = field(default_factory=list)
    echo: EchoWorker | None = None
    """The echo canceller between the microphone and her ear (None without a device microphone)."""
    microphone: AudioSource | None = None
    """The source as opened, before a front-end wraps `source` (the window meters it): the
    device the sound watch reopens when the sound server comes back."""


def make_vad() -> SpeechDetector:
    """A fresh streaming VAD (it keeps state across frames, so one per session) that spares
    the model frames of a quiet room."""
    return SkipQuiet(SileroVad())


async def load_turn_model_or_none() -> SmartTurn | None:
    """Smart Turn, loaded off the event loop; None when it can't be had (a fixed silence then
    ends each turn, the log and `companion doctor` say why)."""
    model, _why = await asyncio.to_thread(load_turn_model)
    return model


def make_transcriber(voice: VoiceSettings, cache_dir: Path, *, progress: Progress | None = None) -> Transcriber:
    """Her hearing engine, loaded and warmed (blocking: call from a worker thread)."""
    if voice.hearing == LOCAL:
        transcriber = local_transcriber(resolve_hearing_model(voice.hearing_model, cache_dir, progress=progress),
                                        cache_dir)
        transcriber.load()
        return transcriber
    raise CompanionError("engine_unknown", f"I don't know how to hear through {voice.hearing}.",
                         stage=Stage.HEARING)


def make_synthesizer(voice: VoiceSettings, cache_dir: Path, *, progress: Progress | None = None) -> Synthesizer:
    """Her speaking engine, loaded (blocking: call from a worker thread); a hibari voice that
    can't be had is Joe's, with a notice (voice.speaking.local)."""
    if voice.speaking == LOCAL:
        return load_voice(voice, cache_dir, progress=progress)
    raise CompanionError("engine_unknown", f"I don't know how to speak through {voice.speaking}.",
                         stage=Stage.SPEAKING)


async def open_devices(
    voice: VoiceSettings, *, sample_rate: int, source: AudioSource | None = None, sink: AudioSink | None = None,
) -> tuple[AudioSource, AudioSink, list[str], EchoWorker | None]:
    """The microphone and speaker from the settings (those not given); one that cannot be
    opened becomes a Null device and a notice (typing still works, and she still speaks with
    no microphone). A device microphone hears through an echo canceller that the device
    speaker feeds with what it plays (its echo cancellation, noise suppression and high-pass
    filter follow the settings)."""
    loop = asyncio.get_running_loop()
    notices: list[str] = []
    echo = await _echo_worker(voice, notices) if source is None else None
    if sink is None or source is None:
        DeviceSink, DeviceSource = await asyncio.to_thread(_device_classes, voice)  # noqa: N806 (classes)
    # Opening a PortAudio stream can take a few hundred ms: off the event loop's thread.
    if sink is None:
        try:
            sink = await asyncio.to_thread(DeviceSink, voice.output_device, loop=loop, preferred_rate=sample_rate,
                                           echo=echo)
        except CompanionError as exc:
            notices.append(exc.sentence)
            sink = NullSink()
    if source is None:
        try:
            source = await asyncio.to_thread(DeviceSource, voice.input_device, loop=loop, echo=echo)
        except CompanionError as exc:
            notices.append(exc.sentence)
            source = NullSource()
            if echo is not None:
                echo.close()
                echo = None
    return source, sink, notices, echo


def _device_classes(voice: VoiceSettings) -> tuple[type, type]:
    """The speaker and microphone classes of the sound path chosen (asks the server: blocking)."""
    from companion.voice.sound.backend import PULSE, choose

    backend = choose(voice.sound_backend)
    log.info("%s", backend.sentence())
    if backend.name == PULSE:
        from companion.voice.sound.pulse_devices import PulseSink, PulseSource

        return PulseSink, PulseSource
    from companion.voice.sound.devices import DeviceSink, DeviceSource

    return DeviceSink, DeviceSource


async def _echo_worker(voice: VoiceSettings, notices: list[str]) -> EchoWorker | None:
    """The echo canceller (its native module loads off the loop); None, with a notice, when
    WebRTC's module cannot start: she still listens, only without echo cancellation."""
    try:
        return await asyncio.to_thread(EchoWorker, EchoSettings.from_voice(voice))
    except Exception as exc:
        log.warning("echo cancellation unavailable", exc_info=True)
        notices.append(f"Echo cancellation could not start ({exc}): on open speakers I may hear "
                       "myself, so a headset is best.")
        return None


async def load_engines(
    voice: VoiceSettings, cache_dir: Path, *, progress: Progress | None = None, bus: EventBus | None = None,
) -> tuple[Transcriber, Synthesizer]:
    """Her hearing and speaking engines, loaded off the event loop (raises CompanionError).

    A Wyoming server (tcp://host:port) is asked what it runs and timed on a small test; one
    that fails then or later emits an ErrorOccurred on `bus` and hands over to the local engine
    (companion.voice.fallback), so a server never stops her from starting.
    """
    bus = bus if bus is not None else EventBus()

    def load() -> tuple[Transcriber | None, Synthesizer | None]:
        return (make_transcriber(voice, cache_dir, progress=progress) if voice.hearing == LOCAL else None,
                make_synthesizer(voice, cache_dir, progress=progress) if voice.speaking == LOCAL else None)

    transcriber, synthesizer = await asyncio.to_thread(load)
    if transcriber is None:
        transcriber = await open_hearing(voice, cache_dir, bus)
    if synthesizer is None:
        synthesizer = await open_voice(voice, cache_dir, bus)
    return transcriber, synthesizer


LOADED_ENGINES, LOADED_TURN_MODEL, LOADED_DEVICES = 0.7, 0.85, 0.95
"""How far loading her voice has got after each step (the engines take most of the time)."""


async def build_voice(
    voice: VoiceSettings, cache_dir: Path, *, progress: Progress | None = None,
    source: AudioSource | None = None, make_sink: Callable[[int], AudioSink] | None = None,
    bus: EventBus | None = None, loaded: Callable[[float], None] | None = None,
) -> VoiceParts:
    """Load both engines off the loop, then open the devices from the settings, unless given:
    `source`, and `make_sink(sample_rate)` for the speaker (`listen` reads and writes WAVs).

    Raises CompanionError with a sentence when an engine cannot be had; a device that cannot
    be opened only adds a notice; a Wyoming server that cannot be reached says so on `bus`.
    `loaded(fraction)` is told how far loading has got (0..1), for a progress display.
    """
    step = loaded or (lambda _fraction: None)
    step(0.05)
    transcriber, synthesizer = await load_engines(voice, cache_dir, progress=progress, bus=bus)
    step(LOADED_ENGINES)  # the engines are most of the wait
    turn_model = await load_turn_model_or_none()
    step(LOADED_TURN_MODEL)
    sink = make_sink(synthesizer.sample_rate) if make_sink is not None else None
    source, sink, notices, echo = await open_devices(voice, sample_rate=synthesizer.sample_rate,
                                                     source=source, sink=sink)
    step(LOADED_DEVICES)
    await asyncio.to_thread(release_free_memory)  # the model files' bytes, read and freed while loading
    step(1.0)
    return VoiceParts(vad=make_vad(), transcriber=transcriber, synthesizer=synthesizer, source=source,
                      sink=sink, listening=not isinstance(source, NullSource), turn_model=turn_model,
                      notices=notices, echo=echo, microphone=source)
