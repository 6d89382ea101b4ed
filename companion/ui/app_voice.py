"""Her ears and voice for the window: a VoiceSession built by companion.voice.factory.

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
from companion.events import EventBus, SpeechKind
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.factory import build_voice
from companion.voice.models.download import Progress
from companion.voice.session import LISTENING_WATCH, VoiceSession
from companion.voice.sound.frames import rms

log = logging.getLogger(__name__)

MIC_LEVEL_GAIN = 8.0
"""Speech RMS is ~0.02-0.15: scaled so a normal voice fills the listening ring."""
SPEECH_LEVEL_GAIN = 5.0
PREVIEW_LINE = "Hello! This is how I sound. Shall we get started?"


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
                 speech_level=None, mic_level=None, progress: Progress | None = None,
                 loaded=None) -> None:
        """`loaded(fraction)`: how far loading her voice has got (for the pill)."""
        self.companion = companion
        self.bus = bus
        self.voice = voice
        self.cache_dir = cache_dir
        self._speech_level = speech_level
        self._mic_level = mic_level
        self._progress = progress
        self._loaded = loaded
        self.session: VoiceSession | None = None
        self.listening = False
        self.notices: list[str] = []
        self._run: asyncio.Task | None = None
        self._muted_by_user = voice.muted

    @property
    def loop(self):
        return self.session.loop if self.session is not None else None

    async def start(self) -> None:
        """Raises CompanionError when an engine cannot be had; a missing device only adds a notice.
        A start that fails or is cancelled half-way closes what it opened."""
        try:
            await self._start()
        except BaseException:
            await self.close()
            raise

    async def _start(self) -> None:
        parts = await build_voice(self.voice, self.cache_dir, progress=self._progress, bus=self.bus,
                                  loaded=self._loaded)
        self.notices.extend(parts.notices)
        if self._speech_level is not None:
            report = self._speech_level
            parts.sink.add_level_listener(lambda level: report(min(1.0, level * SPEECH_LEVEL_GAIN)))
        self.listening = parts.listening
        if parts.listening:
            parts.source = _MeteredSource(parts.source, self._mic_level or (lambda _l: None))
        self.session = VoiceSession.from_parts(parts, brain=CompanionBrain(self.companion), bus=self.bus,
                                               voice=self.voice)
        if self.listening:
            # Supervised: a failure shows as a banner and she listens again.
            self._run = self.companion.supervisor.spawn(LISTENING_WATCH, self.session.run)
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
        self.loop.calling.push_to_talk(down)  # what is said under the key is hers, in every mode
        if down:
            self.loop.interrupt("push-to-talk")
            self._set_loop_muted(False)
        else:
            self._set_loop_muted(self._muted_by_user)

    def interrupt(self) -> None:
        if self.loop is not None:
            self.loop.interrupt("Esc")

    def apply(self, voice: VoiceSettings) -> None:
        self.voice = voice
        if self.session is not None:
            self.session.apply(replace(voice, muted=self._muted_by_user))

    def use_voice(self, engine, voice: VoiceSettings) -> None:
        """Another personality's voice (`engine`, loaded) for her running session; `voice` its settings."""
        if self.session is not None:
            self.session.use_voice(engine)
        self.apply(voice)

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

    async def preview_voice(self, voice: VoiceSettings) -> str:
        """Settings' "Preview voice": her preview line in `voice` (a draft, her personality filling
        in as it would), loaded aside from her running voice and played on her speaker."""
        from companion.voice.speaking.local import load_voice

        if self.session is None:
            return "Her voice is not running, so there is nothing to preview with yet."
        wanted = self.companion.voice_settings(voice)
        engine = await asyncio.to_thread(load_voice, wanted, self.cache_dir)
        audio = await engine.synthesize(PREVIEW_LINE)
        await self.session.sink.play(audio, engine.sample_rate)
        name = engine.model_info.name
        return engine.take_notice() or (f"That was {name} at speed {wanted.speed:g}, pitch "
                                        f"{wanted.pitch:+g} semitones.")

    async def self_test(self) -> None:
        """After a switch (the controller asks): her ear and mouth work, or a CompanionError says which not."""
        if self.session is not None:
            await self.session.self_test()

    async def check_speakers(self) -> str:
        """Settings' "Test my speakers": how much of her test line came back, as a sentence."""
        check = await self.session.check_speakers() if self.session is not None else None
        if check is None:
            return "I need both a microphone and a speaker to test them: check Devices above."
        return check.sentence()

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
