"""Assembling the voice loop from settings: models, her mouth, the narration cache, the brain."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from companion.config import VoiceSettings
from companion.events import EventBus, UserHeard
from companion.voice.audio import AudioSink, AudioSource
from companion.voice.brain_port import CompanionBrain
from companion.voice.loop import BrainPort, LoopSettings, VoiceLoop
from companion.voice.models import Progress, resolve_hearing_model, resolve_voice
from companion.voice.narration_cache import NarrationCache
from companion.voice.smart_turn import SmartTurn, load_turn_model
from companion.voice.speaker import Speaker
from companion.voice.stt import WhisperTranscriber
from companion.voice.tts import PiperSynthesizer
from companion.voice.vad import SileroVad

log = logging.getLogger(__name__)


async def load_models(
    voice: VoiceSettings, cache_dir: Path, *, progress: Progress | None = None
) -> tuple[WhisperTranscriber, PiperSynthesizer]:
    """Resolve, verify and load both models off the event loop (each warmed up once).

    Raises CompanionError with a sentence when a model is missing, corrupt or unloadable.
    """
    def load() -> tuple[WhisperTranscriber, PiperSynthesizer]:
        hearing = WhisperTranscriber(resolve_hearing_model(voice.hearing_model, cache_dir, progress=progress))
        speaking = PiperSynthesizer(resolve_voice(voice.voice, cache_dir, progress=progress), speed=voice.speed)
        hearing.load()
        speaking.load()
        return hearing, speaking

    return await asyncio.to_thread(load)


async def load_turn_model_or_none() -> SmartTurn | None:
    """Smart Turn, loaded off the event loop; None when it can't be had (a fixed silence then
    ends each turn, the log and `companion doctor` say why)."""
    model, _why = await asyncio.to_thread(load_turn_model)
    return model


class VoiceSession:
    """One running voice loop over a source and a sink, talking to a brain.

    `brain` is a Companion (adapted) or anything with the BrainPort methods.
    """

    def __init__(
        self, *, brain: BrainPort | CompanionBrain, bus: EventBus, source: AudioSource, sink: AudioSink,
        transcriber: WhisperTranscriber, synthesizer: PiperSynthesizer, voice: VoiceSettings,
        turn_model: SmartTurn | None = None,
    ) -> None:
        self.brain = brain
        self.bus = bus
        self.source = source
        self.sink = sink
        self.synthesizer = synthesizer
        self.voice = voice
        self.turn_model = turn_model
        """Smart Turn, or None: then a fixed silence ends each turn."""
        self.cache = NarrationCache(synthesizer)
        self.speaker = Speaker(synthesizer, sink, self.cache)
        self.loop = VoiceLoop(
            source=source, speaker=self.speaker, vad=SileroVad(), transcriber=transcriber,
            brain=brain, bus=bus, settings=LoopSettings.from_voice(voice, turn_model=turn_model is not None),
            sink=sink, turn_model=turn_model,
        )
        self.loop.on_busy.append(self.cache.set_busy)
        # Each turn re-reads the narration lines: a personality edit is synthesized in the
        # background before her next tool call (unchanged lines are kept).
        self._unsubscribe = bus.subscribe(self._on_event)

    def _on_event(self, event) -> None:
        if isinstance(event, UserHeard):
            self.refresh_narration()

    def refresh_narration(self) -> None:
        lines = getattr(self.brain, "narration_lines", None)
        if lines is not None:
            try:
                self.cache.refresh(lines())
            except Exception:
                log.exception("could not list the narration lines")

    def apply(self, voice: VoiceSettings) -> None:
        """Mute, barge-in, end-of-turn silence and speed take effect now."""
        self.voice = voice
        self.loop.apply(LoopSettings.from_voice(voice, turn_model=self.turn_model is not None))
        if voice.speed != self.synthesizer.speed:
            self.synthesizer.speed = voice.speed
            self.refresh_narration()

    async def run(self) -> None:
        """Until the source ends (a file) or close() is called (devices)."""
        self.refresh_narration()
        await self.loop.run()

    async def close(self) -> None:
        self._unsubscribe()
        await self.loop.close()
        await self.speaker.close()
        await self.cache.close()
        await self.sink.close()
