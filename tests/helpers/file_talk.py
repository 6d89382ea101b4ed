"""One spoken conversation from a WAV file, read in its own time, through her whole voice pipeline:
the real runtime with the scripted brain on loopback, the VAD, Smart Turn (when given), Whisper
and piper, *Always answer*."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from brain_harness import make_config

from companion.config import VoiceSettings
from companion.events import Event, EventBus
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, WavSource


async def converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model, *, tail_s: float = 1.5,
                   watch: Callable[[Event], object] | None = None,
                   ready: Callable[[], Awaitable[object]] | None = None, **sections) -> VoiceSession:
    """The session after `wav` has been heard and answered; `watch` sees every event of her bus;
    `ready` is awaited once she has started, before the file is heard; `sections` change her
    settings (make_config's)."""
    companion = Companion(make_config(tmp_path, scripted_brain.url, **sections), EventBus())
    if watch is not None:
        companion.bus.subscribe(watch)
    await companion.start()
    if ready is not None:
        await ready()
    source = WavSource(wav, realtime=False, tail_s=tail_s)
    sink = WavSink(lambda: source.position_s, rate=piper_voice.sample_rate, realtime=False)
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice, voice=VoiceSettings(listening="always"),
                           turn_model=turn_model)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    return session
