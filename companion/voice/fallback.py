"""When a Wyoming server fails: a banner naming it, one spoken sentence, and her own engine (or text).

`RemoteHearing` and `RemoteVoice` wrap a Wyoming engine behind the same interface. The first
ServerError (at start or mid-turn) emits an ErrorOccurred with the server and the fix,
loads the local engine if it is installed (never a download in the middle of a conversation)
and hands the request that failed to it, so nothing the user said is lost. Without a local
engine she stops hearing (typing still works) or shows her replies without a voice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Generic, TypeVar
from urllib.parse import urlparse

import numpy as np

from companion.config import VoiceSettings
from companion.errors import Stage
from companion.events import ErrorOccurred, EventBus, Speak, SpeechKind, turn_scope
from companion.voice.audio import resample
from companion.voice.remote import ServerError
from companion.voice.remote_stt import WyomingTranscriber
from companion.voice.remote_tts import WyomingSynthesizer, server_voice
from companion.voice.stt import Transcriber
from companion.voice.tts import Synthesizer

log = logging.getLogger(__name__)

Engine = TypeVar("Engine")
LocalLoader = Callable[[], object]
"""Loads and warms the local engine (blocking, run in a worker thread); None when it is not installed."""


class _Fallback(Generic[Engine]):
    def __init__(self, remote, load_local: LocalLoader | None, bus: EventBus, stage: Stage) -> None:
        self.remote = remote
        self._load_local = load_local
        self._bus = bus
        self._stage = stage
        self.local: Engine | None = None
        self.failed: ServerError | None = None
        """The error that ended the remote engine for this session (None while it works)."""
        self.notice: str | None = None
        """The sentence she says once about the switch (taken by whoever speaks it)."""
        self._switching = asyncio.Lock()

    @property
    def using_remote(self) -> bool:
        return self.failed is None

    async def _switch(self, error: ServerError, *, live: bool = True) -> Engine | None:
        """Leave the server for good (this session): say so once, load the local engine if there is one.

        `live` (mid-conversation): she says the notice now; at start it waits in `notice` until
        her voice is up (`take_notice`)."""
        async with self._switching:
            if self.failed is not None:
                return self.local
            self.failed = error
            if self._load_local is not None:
                try:
                    self.local = await asyncio.to_thread(self._load_local)
                except Exception as exc:  # a damaged local model: carry on as if there were none
                    log.warning("the local engine could not take over: %s", exc)
            role = "hearing" if self._stage is Stage.HEARING else "voice"
            host = urlparse(error.uri).hostname or error.uri
            if self.local is not None:
                then = f"I'm using my own {role} on this computer until you fix it."
                self.notice = f"My {role} server on {host} isn't answering, so I'm using my own {role} on this computer."
            elif self._stage is Stage.HEARING:
                then = "Until then I can't hear you: type to me instead."
                self.notice = f"My hearing server on {host} isn't answering, so I can't hear you. Please type to me."
            else:
                then = "Until then my replies appear as text only."
                self.notice = None  # she has no voice to say it with
            log.warning("%s %s", error.sentence, then)
            self._bus.emit(ErrorOccurred(str(self._stage), error.code, f"{error.sentence} {then}"))
            if live and self.notice:
                # About her servers, not about the turn whose request failed: were it stamped
                # with that turn, her mouth would drop it with the turn once the turn ended.
                with turn_scope(0):
                    self._bus.emit(Speak(SpeechKind.SAY, self.take_notice()))
            return self.local

    async def _stand_in(self) -> Engine | None:
        """The local engine, once a switch in progress (loading it) has finished."""
        async with self._switching:
            return self.local

    def take_notice(self) -> str | None:
        notice, self.notice = self.notice, None
        return notice


class RemoteHearing(_Fallback[Transcriber]):
    """A Transcriber: the Wyoming server until it fails, then the local Whisper or nothing."""

    def __init__(self, remote: WyomingTranscriber, load_local: LocalLoader | None, bus: EventBus) -> None:
        super().__init__(remote, load_local, bus, Stage.HEARING)

    async def start(self) -> None:
        """Read the server's info and time a test clip; a failure switches over at once."""
        try:
            await self.remote.start()
        except ServerError as exc:
            await self._switch(exc, live=False)

    async def transcribe(self, audio: np.ndarray) -> str:
        if self.failed is None:
            try:
                return await self.remote.transcribe(audio)
            except ServerError as exc:
                await self._switch(exc)
        local = await self._stand_in()
        return "" if local is None else await local.transcribe(audio)


class RemoteVoice(_Fallback[Synthesizer]):
    """A Synthesizer: the Wyoming server until it fails, then the local piper or silence (text only)."""

    def __init__(self, remote: WyomingSynthesizer, load_local: LocalLoader | None, bus: EventBus) -> None:
        super().__init__(remote, load_local, bus, Stage.SPEAKING)
        self._speed = remote.speed

    async def start(self) -> None:
        try:
            await self.remote.start()
        except ServerError as exc:
            await self._switch(exc, live=False)
            if self.local is not None:
                self.remote.sample_rate = self.local.sample_rate

    @property
    def sample_rate(self) -> int:
        # Fixed once started: the sink was opened at this rate, so a local voice is resampled to it.
        return self.remote.sample_rate

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        self._speed = self.remote.speed = value
        if self.local is not None:
            self.local.speed = value

    @property
    def synth_count(self) -> int:
        return self.remote.synth_count + (getattr(self.local, "synth_count", 0) if self.local else 0)

    async def synthesize(self, text: str) -> np.ndarray:
        if self.failed is None:
            try:
                return await self.remote.synthesize(text)
            except ServerError as exc:
                await self._switch(exc)
        local = await self._stand_in()
        if local is None:
            return np.zeros(0, dtype=np.float32)
        local.speed = self._speed
        audio = await local.synthesize(text)
        return resample(audio, local.sample_rate, self.sample_rate)


def server_lines(transcriber: object, synthesizer: object) -> list[str]:
    """What Settings → Voice shows about her Wyoming servers (nothing for engines on this computer)."""
    lines = []
    for engine, role, kind in ((transcriber, "Hearing", "models"), (synthesizer, "Speaking", "voices")):
        if not isinstance(engine, _Fallback):
            continue
        uri = engine.remote.uri
        if engine.failed is not None:
            instead = "her own engine on this computer stands in" if engine.local is not None else (
                "she can't hear you (type to her)" if role == "Hearing" else "her replies are text only")
            lines.append(f"{role}: {uri} isn't answering, so {instead}.")
        elif engine.remote.info is not None:
            lines.append(f"{role}: {uri} runs {engine.remote.info.summary(kind)}.")
    return lines


def _local_loader(voice: VoiceSettings, cache_dir: Path, what: str) -> LocalLoader | None:
    """How to load her own engine to stand in for a server, or None when it would need a download."""
    from companion.voice.models import missing_models, resolve_hearing_model, resolve_voice
    from companion.voice.stt import WhisperTranscriber
    from companion.voice.tts import PiperSynthesizer

    field = "hearing_model" if what == "hearing model" else "voice"
    for candidate in (voice, replace(voice, **{field: ""})):  # as set, else the installed pack
        if what in {m.what for m in missing_models(candidate, cache_dir)}:
            continue
        if what == "hearing model":
            def load_hearing(setting: str = candidate.hearing_model) -> WhisperTranscriber:
                engine = WhisperTranscriber(resolve_hearing_model(setting, cache_dir))
                engine.load()
                return engine
            return load_hearing

        def load_voice(setting: str = candidate.voice) -> PiperSynthesizer:
            engine = PiperSynthesizer(resolve_voice(setting, cache_dir), speed=voice.speed)
            engine.load()
            return engine
        return load_voice
    return None


async def open_hearing(voice: VoiceSettings, cache_dir: Path, bus: EventBus) -> RemoteHearing:
    """Her hearing on the Wyoming server voice.hearing, started (an unreachable one has already fallen back)."""
    engine = RemoteHearing(WyomingTranscriber(voice.hearing), _local_loader(voice, cache_dir, "hearing model"), bus)
    await engine.start()
    return engine


async def open_voice(voice: VoiceSettings, cache_dir: Path, bus: EventBus) -> RemoteVoice:
    """Her voice on the Wyoming server voice.speaking, started (an unreachable one has already fallen back)."""
    remote = WyomingSynthesizer(voice.speaking, voice=server_voice(voice.voice), speed=voice.speed)
    engine = RemoteVoice(remote, _local_loader(voice, cache_dir, "voice"), bus)
    await engine.start()
    return engine
