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
from companion.voice.hearing.stt import Transcriber
from companion.voice.remote.hearing import WyomingTranscriber
from companion.voice.remote.servers import ServerError
from companion.voice.remote.speaking import WyomingSynthesizer, server_voice
from companion.voice.self_test import check_hearing, check_voice
from companion.voice.sound.audio import resample
from companion.voice.speaking.tts import Synthesizer

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
        self._switch_task: asyncio.Task[Engine | None] | None = None
        """The switch away from the server, once one has begun; this engine owns it, not a turn."""
        self._switching = asyncio.Lock()
        """Held for a whole switch: two never interleave."""
        self._closed = False
        """Her voice has closed: no switch begins or ends after that (see close)."""

    @property
    def using_remote(self) -> bool:
        return self._switch_task is None

    @property
    def switching(self) -> bool:
        """A switch to her own engine is under way (loading or testing it)."""
        return self._switch_task is not None and not self._switch_task.done()

    async def _switch(self, error: ServerError, *, live: bool = True) -> Engine | None:
        """Leave the server for good (this session): say so once, load the local engine if there is one.

        The switch runs in a task of its own, and callers wait for it shielded: the user speaking
        again cancels the request that found the server gone (an early decode, a sentence of an
        interrupted reply), never the switch, so the local engine is set whatever becomes of that
        request. Every later request waits for the same switch. `live` (mid-conversation): she
        says the notice now; at start it waits in `notice` until her voice is up (`take_notice`)."""
        if self._closed:
            return None  # the request is being dropped with her voice: no banner, no notice
        task = self._switch_task
        if task is None or task.cancelled():  # cancelled only when her voice closed mid-switch
            task = self._switch_task = asyncio.get_running_loop().create_task(self._leave_server(error, live))
        return await asyncio.shield(task)

    async def _leave_server(self, error: ServerError, live: bool) -> Engine | None:
        # About her servers, not about the turn whose request failed: were the notice stamped
        # with that turn, her mouth would drop it with the turn once the turn ended.
        with turn_scope(0):
            async with self._switching:
                local, why = await self._take_over()
                # One step from here on (no await): nobody ever sees the engine half-switched.
                self.failed, self.local = error, local
                then, self.notice = self._sentences(error, local, why)
            log.warning("%s %s", error.sentence, then)
            self._bus.emit(ErrorOccurred(str(self._stage), error.code, f"{error.sentence} {then}"))
            if live and self.notice:
                self._say_notice()
            return local

    def _say_notice(self) -> None:
        """Say the notice of a switch made mid-conversation (RemoteHearing waits until the user is done)."""
        with turn_scope(0):
            self._bus.emit(Speak(SpeechKind.SAY, self.take_notice()))

    async def _take_over(self) -> tuple[Engine | None, str]:
        """The local engine, loaded and tested; (None, why) when there is none or it does not work."""
        if self._load_local is None:
            return None, ""
        try:
            engine = await asyncio.to_thread(self._load_local)
            await self._self_test(engine)
        except Exception as exc:  # a damaged local model: the best engine left is none, and she says so
            log.warning("the local %s could not take over", self._role, exc_info=True)
            return None, str(exc)
        return engine, ""

    async def _self_test(self, engine: Engine) -> None:
        raise NotImplementedError

    @property
    def _role(self) -> str:
        return "hearing" if self._stage is Stage.HEARING else "voice"

    def _sentences(self, error: ServerError, local: Engine | None, why: str) -> tuple[str, str | None]:
        """(what the banner adds to the server's error, the notice she says)."""
        role = self._role
        host = urlparse(error.uri).hostname or error.uri
        broken = f" My own {role} on this computer did not work either: {why}" if why else ""
        if local is not None:
            return (f"I'm using my own {role} on this computer until you fix it.",
                    f"My {role} server on {host} isn't answering, so I'm using my own {role} on this computer.")
        if self._stage is Stage.HEARING:
            return (f"Until then I can't hear you: type to me instead.{broken}",
                    f"My hearing server on {host} isn't answering, so I can't hear you. Please type to me.")
        return f"Until then my replies appear as text only.{broken}", None  # no voice to say it with

    async def _stand_in(self) -> Engine | None:
        """The local engine, once the switch under way (if any) has finished."""
        task = self._switch_task
        return await asyncio.shield(task) if task is not None and not task.cancelled() else self.local

    def take_notice(self) -> str | None:
        notice, self.notice = self.notice, None
        return notice

    async def close(self) -> None:
        """Her voice is closing: a switch still under way ends here, unsaid, with nothing shown.

        Its request was a sentence or a transcript nobody waits for any more (her voice closes
        once the conversation is over, or when she quits or restarts her voice); finished, the
        switch would show its banner and say its notice after she closed, to nobody, into a
        closed conversation store. The server is tried again when her voice next opens, and a
        dead one says so then. A notice not yet said (her hearing's, held for quiet) is dropped."""
        self._closed = True
        self.notice = None
        task = self._switch_task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


class RemoteHearing(_Fallback[Transcriber]):
    """A Transcriber: the Wyoming server until it fails, then the local Whisper or nothing."""

    def __init__(self, remote: WyomingTranscriber, load_local: LocalLoader | None, bus: EventBus) -> None:
        super().__init__(remote, load_local, bus, Stage.HEARING)
        self._busy = False
        self._notice_held = False

    def set_busy(self, busy: bool) -> None:
        """Told by the voice loop: True while the user speaks or a turn runs, False once all is quiet.

        The notice of a switch waits for quiet. The request that finds the server gone is most
        often the early transcript of a pause inside a question: said there, her notice ran over
        the rest of the question, which her ear then heard only as talk over her (without
        barge-in, not at all) and the question was cut at the pause. The banner is shown at once."""
        self._busy = busy
        if not busy and self._notice_held:
            # Said after the loop's own bookkeeping of this change, not from inside it (the
            # speaker's callbacks are what tell it): her voice starting makes it busy again.
            asyncio.get_running_loop().call_soon(self._say_notice)

    def _say_notice(self) -> None:
        if self.notice is None:
            return  # said already (a second quiet moment came before it was)
        self._notice_held = self._busy
        if not self._busy:
            super()._say_notice()

    async def start(self) -> None:
        """Read the server's info and time a test clip; a failure switches over at once."""
        try:
            await self.remote.start()
        except ServerError as exc:
            await self._switch(exc, live=False)

    async def _self_test(self, engine: Transcriber) -> None:
        await check_hearing(engine)

    async def transcribe(self, audio: np.ndarray) -> str:
        if self.using_remote:
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

    async def _self_test(self, engine: Synthesizer) -> None:
        count = getattr(engine, "synth_count", None)
        await check_voice(engine)
        if count is not None:
            engine.synth_count = count  # the test word is not one of her sentences

    async def synthesize(self, text: str) -> np.ndarray:
        if self.using_remote:
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
    from companion.voice.hearing.local import local_transcriber
    from companion.voice.hearing.stt import WhisperTranscriber
    from companion.voice.models.files import missing_models, resolve_hearing_model
    from companion.voice.speaking.local import load_voice
    from companion.voice.speaking.tts import LocalSynthesizer

    field = "hearing_model" if what == "hearing model" else "voice"
    for candidate in (voice, replace(voice, **{field: ""})):  # as set, else the installed pack
        if what in {m.what for m in missing_models(candidate, cache_dir)}:
            continue
        if what == "hearing model":
            def load_hearing(setting: str = candidate.hearing_model) -> WhisperTranscriber:
                engine = local_transcriber(resolve_hearing_model(setting, cache_dir), cache_dir)
                engine.load()
                return engine
            return load_hearing

        def load_own_voice(setting: str = candidate.voice) -> LocalSynthesizer:
            return load_voice(replace(voice, voice=setting), cache_dir)  # Joe stands in for a missing hibari
        return load_own_voice
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
