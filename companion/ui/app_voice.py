"""Her ears and voice for the window, on top of companion.voice.session.

Everything here runs on the asyncio loop (qasync, the Qt thread); model loading runs in a
worker thread. Audio levels and download progress leave through the bridge only.
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
from companion.voice.audio import NullSink, NullSource
from companion.voice.brain_port import CompanionBrain
from companion.voice.models import Progress
from companion.voice.session import VoiceSession, load_models, load_turn_model_or_none
from companion.voice.vad import rms

log = logging.getLogger(__name__)

MIC_LEVEL_GAIN = 8.0
"""Speech RMS is ~0.02-0.15: scaled so a normal voice fills the listening ring."""
SPEECH_LEVEL_GAIN = 5.0


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


class WindowVoice:
    """Her voice for the window: H4's VoiceSession on the real devices, plus what the window
    needs (levels for the face, mute and push-to-talk, preview lines). `notices` says what
    did not work."""

    def __init__(self, companion: Companion, bus: EventBus, voice: VoiceSettings, cache_dir: Path, *,
                 speech_level=None, mic_level=None, progress: Progress | None = None) -> None:
        self.companion = companion
        self.bus = bus
        self.voice = voice
        self.cache_dir = cache_dir
        self._speech_level = speech_level
        self._mic_level = mic_level
        self._progress = progress
        self.session: VoiceSession | None = None
        self.listening = False
        self.notices: list[str] = []
        self._run: asyncio.Task | None = None
        self._muted_by_user = voice.muted

    @property
    def loop(self):
        return self.session.loop if self.session is not None else None

    async def start(self) -> None:
        """Raises CompanionError when the models cannot be had; a missing device only adds a notice."""
        from companion.voice.devices import DeviceSink, DeviceSource

        transcriber, synthesizer = await load_models(self.voice, self.cache_dir, progress=self._progress)
        turn_model = await load_turn_model_or_none()
        loop = asyncio.get_running_loop()
        # Opening a PortAudio stream can take a few hundred ms: do it off the Qt thread.
        try:
            sink = await asyncio.to_thread(DeviceSink, self.voice.output_device, loop=loop,
                                           preferred_rate=synthesizer.sample_rate)
        except CompanionError as exc:
            self.notices.append(exc.sentence)
            sink = NullSink()
        if self._speech_level is not None:
            report = self._speech_level
            sink.add_level_listener(lambda level: report(min(1.0, level * SPEECH_LEVEL_GAIN)))
        try:
            device = await asyncio.to_thread(DeviceSource, self.voice.input_device, loop=loop)
            source = _MeteredSource(device, self._mic_level or (lambda _l: None))
            self.listening = True
        except CompanionError as exc:
            self.notices.append(exc.sentence)
            source = NullSource()  # typing still works, and she still speaks her answers
        self.session = VoiceSession(brain=CompanionBrain(self.companion), bus=self.bus, source=source,
                                    sink=sink, transcriber=transcriber, synthesizer=synthesizer,
                                    voice=self.voice, turn_model=turn_model)
        if self.listening:
            self._run = asyncio.ensure_future(self.session.run())
        else:
            self.session.refresh_narration()  # no loop to run, but her narration is still cached

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
        if self.session is not None:
            self.session.apply(replace(voice, muted=self._muted_by_user))

    def refresh_narration(self) -> None:
        """Synthesize changed narration lines now (in the background), not when first said."""
        if self.session is not None:
            self.session.refresh_narration()

    def say_preview(self, lines: list[tuple[str, str]]) -> bool:
        """Speak (kind, text) lines in her voice; False when she has no voice right now."""
        if self.session is None:
            return False
        for kind, text in lines:
            self.session.speaker.say(text, SpeechKind(kind))
        return True

    def _set_loop_muted(self, muted: bool) -> None:
        if self.loop is not None:
            self.loop.apply(replace(self.loop.settings, muted=muted))

    async def close(self) -> None:
        if self.session is not None:
            with contextlib.suppress(Exception):
                await self.session.close()
        if self._run is not None:
            self._run.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._run
