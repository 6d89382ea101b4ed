"""Her ears and voice for the window: models, microphone, speaker and the voice loop, assembled.

Everything here runs on the asyncio loop (qasync, the Qt thread); model loading runs in
worker threads. Audio levels and download progress leave through the bridge only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from pathlib import Path

from companion.config import VoiceSettings
from companion.errors import CompanionError
from companion.events import EventBus, SpeechKind
from companion.runtime import Companion
from companion.tools.context import Channel
from companion.voice.audio import NullSink, NullSource
from companion.voice.loop import LoopSettings, VoiceLoop
from companion.voice.models import Progress
from companion.voice.vad import rms

log = logging.getLogger(__name__)

MIC_LEVEL_GAIN = 8.0
"""Speech RMS is ~0.02-0.15: scaled so a normal voice fills the listening ring."""
SPEECH_LEVEL_GAIN = 5.0


class BrainPort:
    """What the voice loop needs from the brain, from the Companion runtime."""

    def __init__(self, companion: Companion) -> None:
        self._companion = companion

    async def ask(self, text: str) -> None:
        await self._companion.ask(text, Channel.VOICE)

    def cancel_turn(self) -> None:
        self._companion.cancel_turn()

    def keep_only_spoken(self, spoken: str) -> None:
        self._companion.note_heard_reply(spoken)

    def hold_notices(self, hold: bool) -> None:
        self._companion.hold_notices(hold)


class _MeteredSource:
    """Passes microphone frames through, reporting their level for the listening cue."""

    realtime = True

    def __init__(self, source, report) -> None:
        self._source = source
        self._report = report

    async def read(self):
        frame = await self._source.read()
        if frame is not None:
            self._report(min(1.0, rms(frame) * MIC_LEVEL_GAIN))
        return frame

    def close(self) -> None:
        self._source.close()


class VoiceSession:
    """Load the models, open the devices, run the loop. `notices` says what did not work."""

    def __init__(self, companion: Companion, bus: EventBus, voice: VoiceSettings, cache_dir: Path, *,
                 speech_level=None, mic_level=None, progress: Progress | None = None) -> None:
        self.companion = companion
        self.bus = bus
        self.voice = voice
        self.cache_dir = cache_dir
        self._speech_level = speech_level
        self._mic_level = mic_level
        self._progress = progress
        self.loop: VoiceLoop | None = None
        self.speaker = None
        self.listening = False
        self.notices: list[str] = []
        self._run: asyncio.Task | None = None
        self._closers: list = []
        self._muted_by_user = voice.muted

    async def start(self) -> None:
        """Raises CompanionError when the models cannot be had; a missing device only adds a notice."""
        from companion.voice.devices import DeviceSink, DeviceSource
        from companion.voice.models import resolve_hearing_model, resolve_voice
        from companion.voice.narration_cache import NarrationCache
        from companion.voice.speaker import Speaker
        from companion.voice.stt import WhisperTranscriber
        from companion.voice.tts import PiperSynthesizer
        from companion.voice.vad import SileroVad

        hearing = await asyncio.to_thread(resolve_hearing_model, self.voice.hearing_model,
                                          self.cache_dir, progress=self._progress)
        voice = await asyncio.to_thread(resolve_voice, self.voice.voice, self.cache_dir,
                                        progress=self._progress)
        transcriber = WhisperTranscriber(hearing, cpu_threads=1)
        synthesizer = PiperSynthesizer(voice, speed=self.voice.speed)
        await asyncio.gather(asyncio.to_thread(transcriber.load), asyncio.to_thread(synthesizer.load))
        try:
            sink = DeviceSink(self.voice.output_device)
        except CompanionError as exc:
            self.notices.append(exc.sentence)
            sink = NullSink()
        if self._speech_level is not None:
            report = self._speech_level
            sink.add_level_listener(lambda level: report(min(1.0, level * SPEECH_LEVEL_GAIN)))
        try:
            source = DeviceSource(self.voice.input_device)
            self.listening = True
        except CompanionError as exc:
            self.notices.append(exc.sentence)
            source = NullSource()  # typing still works, and she still speaks her answers
        if self._mic_level is not None and self.listening:
            source = _MeteredSource(source, self._mic_level)
        cache = NarrationCache(synthesizer)
        self.speaker = Speaker(synthesizer, sink, cache)
        self.loop = VoiceLoop(source=source, speaker=self.speaker, vad=SileroVad(), transcriber=transcriber,
                              brain=BrainPort(self.companion), bus=self.bus,
                              settings=LoopSettings.from_voice(self.voice), sink=sink)
        self.loop.on_busy.append(cache.set_busy)
        cache.refresh(line for lines in self.companion.narration_lines().values()
                      for line in (lines.announce, *lines.heartbeat, lines.complete, lines.fail))
        self._closers = [self.loop.close, self.speaker.close, cache.close, sink.close]
        if self.listening:
            self._run = asyncio.ensure_future(self.loop.run())

    # --- controls -------------------------------------------------------------------------
    def set_muted(self, muted: bool) -> None:
        self._muted_by_user = muted
        self._set_loop_muted(muted)

    def push_to_talk(self, down: bool) -> None:
        """Holding the key: she stops talking and listens, even when muted."""
        if self.loop is None:
            return
        if down:
            self.loop.interrupt()
            self._set_loop_muted(False)
        else:
            self._set_loop_muted(self._muted_by_user)

    def interrupt(self) -> None:
        if self.loop is not None:
            self.loop.interrupt()

    def apply(self, voice: VoiceSettings) -> None:
        self.voice = voice
        if self.loop is not None:
            self.loop.apply(replace(LoopSettings.from_voice(voice), muted=self._muted_by_user))

    def say_preview(self, lines: list[tuple[str, str]]) -> bool:
        """Speak (kind, text) lines in her voice; False when she has no voice right now."""
        if self.speaker is None:
            return False
        for kind, text in lines:
            self.speaker.say(text, SpeechKind(kind))
        return True

    def _set_loop_muted(self, muted: bool) -> None:
        if self.loop is not None:
            self.loop.apply(replace(self.loop.settings, muted=muted))

    async def close(self) -> None:
        for close in self._closers:
            with contextlib.suppress(Exception):
                result = close()
                if asyncio.iscoroutine(result):
                    await result
        if self._run is not None:
            self._run.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._run
