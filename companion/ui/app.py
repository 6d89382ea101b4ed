"""The desktop app: builds the core, the window and her voice, and wires them together.

`CompanionApp` is the wiring, usable from tests with a scripted brain and no audio;
`run(config)` opens it in a process of its own (companion.ui.launch).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from companion.api_keys import with_api_key
from companion.config import Settings
from companion.errors import could_not_save
from companion.events import EventBus
from companion.tools.context import Channel
from companion.ui.app_dialogs import AppDialogs
from companion.ui.app_lifecycle import NOT_STARTED, BackgroundTasks, face_in, first_frame, load_core
from companion.ui.app_listening import ListeningControls
from companion.ui.banner import KnowVoicesQuestion
from companion.ui.brain_watch import BrainWatch
from companion.ui.bridge import EventBridge
from companion.ui.cards.answers import answer_card
from companion.ui.cards.gate_link import link_gate
from companion.ui.desktop.presence import DesktopPresence
from companion.ui.desktop.tray import TrayIcon
from companion.ui.her_voice import HerVoice
from companion.ui.launch import name_the_loop
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.window import CompanionWindow

log = logging.getLogger(__name__)


class CompanionApp(QObject):
    """One running companion with a window. `start()` after `show()`; `close()` to end."""

    conversation_shown = Signal(int)
    """A new or reopened conversation is in the transcript (its id)."""

    def __init__(self, config, *, model=None, registry=None, with_voice: bool = True,
                 launched_at: float | None = None) -> None:
        super().__init__()
        name_the_loop()  # built on the thread her loop runs on
        self.config = config
        self.times: dict[str, float] = {"launched": launched_at or time.perf_counter()}
        self.bus = EventBus()
        self.tasks = BackgroundTasks(self.bus)
        """What runs in the background, ended by close()."""
        self.bridge = EventBridge(self)
        self.bridge.attach(self.bus)
        self.keeper = SettingsKeeper(config.paths, config.settings, self, saved=config.saved)
        settings = config.settings
        self.window = CompanionWindow(brain=settings.brain, push_to_talk_key=settings.ui.push_to_talk_key)
        # Her chosen face from the first frame, before the core reads the whole file.
        self.window.face.set_character(face_in(Path(settings.personality or config.paths.personality_file)))
        self.window.connect_bridge(self.bridge)
        self.companion = None
        """The core (companion.runtime.Companion), built by start(): its import is slow."""
        self._given = {"registry": registry, "model": model}
        self.gate = None
        self.brain_watch = BrainWatch(self.window, core=lambda: self.companion)
        """Asks her brain whether it is there, so the window can say it is not."""
        self.her_voice = HerVoice(self.window, self.bridge, self.keeper, self.bus, config.paths.models_dir,
                                  core=lambda: self.companion, spawn=self.tasks.spawn, times=self.times)
        self.voices = self.her_voice.controller
        """Owns her one voice session (see the `voice` property)."""
        self.voice_started = self.her_voice.started
        """Set once her voice has started, or failed to with a banner saying why."""
        self.with_voice = with_voice
        self.window.approvals.spoken_answers = with_voice  # under --no-voice no card says "say yes"
        self.tray = TrayIcon(self.window)
        self.tray.offer_voice(with_voice)
        self.closed = asyncio.Event()
        self._closing = False
        self._waiting_text: list[str] = []
        self._start_failure = ""
        """The banner's sentence while the core could not start ("" otherwise)."""
        self._unkeyed_brain = None
        """The brain settings as saved (the key is looked up only when these change)."""
        self.dialogs = AppDialogs(
            self.window, self.keeper, self.bridge, config.paths, core=lambda: self.companion,
            voice=lambda: self.voice, settings_opened=lambda dialog: self.desktop.settings_opened(dialog),
            reopen=lambda conversation_id: self.tasks.spawn(self.reopen_conversation(conversation_id)),
            personality_applied=self._personality_applied,
            autostart_present=lambda: self.desktop.places.autostart_entry.exists(),
            launcher_refusal=lambda: self.desktop.launcher_refusal())
        """Settings, conversations, notes and the personality editor."""
        self._wire()
        self.desktop = DesktopPresence(self)
        """Beyond the window: the global push-to-talk key, the compact face, the one instance."""
        self.listening = ListeningControls(self.tray, self.keeper, self.window, save=self._save,
                                           her_name=self._her_name)
        """The tray's Listening mode menu and what the pill says calls her."""
        self.know_voices = KnowVoicesQuestion(
            self.window.banners, lambda: self.keeper.settings.voice.know_voices, self._save_know_voices,
            listening=lambda: self.voice is not None)
        """Whether to know voices, asked once the first time a decision would go by one."""
        self.know_voices.attach(self.bridge)
        if config.notice:
            self.window.banners.show_banner("settings", config.notice, kind="warning")

    # --- wiring ---------------------------------------------------------------------------
    def _wire(self) -> None:
        w = self.window
        w.text_submitted.connect(self.send_text)
        w.mute_toggled.connect(self.set_muted)
        w.push_to_talk.connect(lambda down: self.voice and self.voice.push_to_talk(down))
        w.stop_requested.connect(self.stop_talking)
        w.settings_requested.connect(self.open_settings)
        w.personality_requested.connect(self.dialogs.open_personality_editor)
        w.always_on_top_toggled.connect(self._remember_on_top)
        w.quit_requested.connect(self.request_quit)
        w.new_conversation_requested.connect(lambda: self.tasks.spawn(self.new_conversation()))
        w.conversations_requested.connect(self.dialogs.open_conversations)
        w.notes_requested.connect(self.dialogs.open_notes)
        self.tray.quit_requested.connect(self.request_quit)
        self.tray.mute_toggled.connect(w.set_muted)
        w.mute_toggled.connect(self.tray.show_muted)
        self.keeper.changed.connect(self._settings_changed)
        self.bridge.download_progress.connect(self.her_voice.download_progress)
        self.bridge.error.connect(self.brain_watch.error_seen)

    def show(self) -> None:
        ui = self.keeper.settings.ui
        self.window.restore_saved_geometry(ui.geometry)
        self.window.set_always_on_top(ui.always_on_top)
        self.window.set_muted(self.keeper.settings.voice.muted)
        self.window.show()
        self.tray.show()
        self.times["window_shown"] = time.perf_counter()

    async def start(self) -> None:
        """Start the core, the approval cards and (in the background) her voice."""
        self.window.set_started(False)
        self.window.banners.clear("core")  # Try again: the last failure is over
        self._start_failure = ""
        if "first_frame" not in self.times:
            await first_frame(self.window, self.times)
        try:
            # The core pulls in the HTTP client stack (~0.5 s of imports): load it off the Qt
            # thread so her face keeps moving, then build and start it here.
            runtime = await load_core()
            self._unkeyed_brain = self.keeper.settings.brain
            self.her_voice.core_started()
            settings = await asyncio.to_thread(with_api_key, self.keeper.settings)  # keyring lookup
            self.companion = runtime.Companion(replace(self.config, settings=settings), self.bus,
                                               **self._given)
            await self.companion.start()
        except Exception as exc:  # e.g. an action tool that fails to import
            log.exception("the core did not start")
            await self._start_failed(exc)
            return
        self.gate = link_gate(self.companion, self.config.paths, self.bus, self.window.approvals)
        self.listening.refresh()  # her name is known now
        self.window.set_started(True)
        self.window.captions.load(self.companion.transcript())
        self.window.show_state("idle")
        self._follow_personality()  # her face is the chosen personality's from the first frame
        self.times["core_ready"] = time.perf_counter()
        if self._waiting_text:
            self.send_text("\n".join(self._waiting_text))
            self._waiting_text.clear()
        self.tasks.spawn(self.brain_watch.probe())
        if self.with_voice:
            self.her_voice.offer()

    async def _start_failed(self, exc: Exception) -> None:
        """The pill and a banner say so, with Try again; what was typed meanwhile stays in the
        transcript and is asked once she starts."""
        half_started, self.companion = self.companion, None
        if half_started is not None:
            try:
                await half_started.close()
            except Exception:
                log.exception("closing the core that did not start")
        self._start_failure = f"I couldn't start: {exc}"
        self.window.banners.show_banner("core", self._start_failure,
                                        actions=[("Try again", lambda: self.tasks.spawn(self.start()))])
        self.window.set_start_failed(self._start_failure)
        for text in self._waiting_text:
            self._show_waiting(text)

    def _show_waiting(self, text: str) -> None:
        self.window.captions.add_heard(text, spoken=False)
        self.window.captions.add_notice(NOT_STARTED)

    @property
    def voice(self):
        """Her running voice (ui.app_voice.WindowVoice), or None."""
        return self.her_voice.session

    @property
    def settings_dialog(self):
        """The Settings dialog opened last (None before the first)."""
        return self.dialogs.settings

    def open_settings(self, tab: str = "") -> None:
        self.dialogs.open_settings(tab)

    def open_personality_editor(self) -> None:
        self.dialogs.open_personality_editor()

    # --- what the user does ---------------------------------------------------------------
    def send_text(self, text: str) -> None:
        if self._answers_a_card(text, typed=True):
            return
        if self.companion is None or self.companion.conversation is None:
            self._waiting_text.append(text)  # typed while she was still starting: asked once ready
            if self._start_failure:
                self._show_waiting(text)
            return
        self.tasks.spawn(self.companion.ask(text, Channel.TEXT))

    def _answers_a_card(self, text: str, *, typed: bool = False) -> bool:
        """A "yes" or "no" (typed, or heard by the voice loop) while a card is open answers the
        card: it must not start a new turn, which would cancel the one waiting for the answer."""
        return answer_card(self.window.approvals, self.window.captions, text, typed=typed)

    def set_muted(self, muted: bool) -> None:
        if self.voice is not None:
            self.voice.set_muted(muted)
        settings = self.keeper.settings
        self._save(replace(settings, voice=replace(settings.voice, muted=muted)))

    def stop_talking(self) -> None:
        """Esc or Stop: one interruption ends her turn (model, tool, queued speech, playback)."""
        if self.companion is not None:
            self.companion.interrupt("Esc")

    # --- conversations and notes ------------------------------------------------------------
    async def new_conversation(self) -> None:
        """☰ → New conversation: what she is saying stops, the transcript and history empty."""
        if self.companion is None or self.companion.store is None:
            return
        if self.voice is not None:
            self.voice.interrupt()
        conversation_id = await self.companion.new_conversation()
        self.window.captions.clear()
        self.window.face.set_expression("neutral")
        self.conversation_shown.emit(conversation_id)

    async def reopen_conversation(self, conversation_id: int) -> None:
        if self.companion is None or self.companion.store is None:
            return
        if self.voice is not None:
            self.voice.interrupt()
        await self.companion.open_conversation(conversation_id)
        self.window.captions.load(self.companion.transcript())
        self.conversation_shown.emit(conversation_id)

    def _personality_applied(self) -> None:
        if self.voice is not None:
            self.voice.refresh_narration()
        self._follow_personality()

    def _follow_personality(self) -> None:
        """Her face and voice follow the personality file's `face:` and `voice:`."""
        if self.companion is None or self.companion.personality is None:
            return
        self.window.face.set_character(self.companion.personality.current.face)
        self.her_voice.follow_personality()

    def _save_know_voices(self, answer: str) -> None:
        settings = self.keeper.settings
        self._save(replace(settings, voice=replace(settings.voice, know_voices=answer)))

    def _remember_on_top(self, on: bool) -> None:
        settings = self.keeper.settings
        self._save(replace(settings, ui=replace(settings.ui, always_on_top=on)))

    def _settings_changed(self, settings: Settings) -> None:
        self.window.brain = settings.brain
        self.window.set_push_to_talk_key(settings.ui.push_to_talk_key)
        if self.companion is None:
            return  # start() reads the keeper's settings
        if settings.brain == self._unkeyed_brain:
            # Mute, voice, tools…: the key looked up last time still holds (no keyring on the Qt thread).
            self.companion.apply_settings(replace(settings, brain=self.companion.settings.brain))
        else:
            self._unkeyed_brain = settings.brain
            self.window.brain_changed(settings.brain)  # the old address's Offline and banner go now
            self.tasks.spawn(self._apply_brain_with_key(settings.brain))
        self.window.face.set_character(self.companion.personality.current.face)
        self.her_voice.settings_changed(settings)

    async def _apply_brain_with_key(self, brain) -> None:
        """Saved brain settings: the API key is looked up in the keyring off the Qt thread."""
        keyed = await asyncio.to_thread(with_api_key, replace(self.keeper.settings, brain=brain))
        if self.companion is not None and self._unkeyed_brain == brain:  # not superseded meanwhile
            self.companion.apply_settings(replace(self.keeper.settings, brain=keyed.brain))
            await self.brain_watch.probe()  # the new brain is asked now, not at the next message

    def _her_name(self) -> str:
        store = self.companion.personality if self.companion is not None else None
        return store.current.name if store is not None else ""

    def _save(self, settings: Settings) -> None:
        try:
            self.keeper.apply(settings)
        except OSError as exc:
            sentence = could_not_save("your settings", self.config.paths.config_dir, exc)
            self.window.banners.show_banner("settings", sentence, kind="warning")

    # --- ending ---------------------------------------------------------------------------
    def request_quit(self) -> None:
        if self._closing:
            return
        if self.dialogs.editing():
            # Unsaved personality edits are never lost to Quit: the editor asks first, and
            # she quits only once it has closed (Cancel keeps her running).
            if not self.dialogs.editor.ask_to_close(then=lambda: self._closing or self.tasks.spawn(self.close())):
                self.window.keep_open()
            return
        self.tasks.spawn(self.close())

    async def close(self) -> None:
        if self._closing:
            # Quit from the tray, then the window's close: both return once she has ended.
            await self.closed.wait()
            return
        self._closing = True
        try:
            settings = self.keeper.settings
            self._save(replace(settings, ui=replace(settings.ui, geometry=self.window.saved_geometry())))
            self.desktop.close()
            self.tray.hide()
            self.window.hide()
            # First, so nothing still starting (her voice, a turn) begins after its owner closed.
            await self.tasks.end()
            await self.her_voice.close()
            await self.brain_watch.close()
            if self.companion is not None:
                await self.companion.close()
            await self.tasks.end()  # what closing started
            self.bridge.detach()
        finally:
            self.closed.set()

def run(config, *, with_voice: bool = True) -> int:
    """Open the window and run until she is closed (companion.ui.launch runs the process)."""
    from companion.ui.launch import run_window

    return run_window(config, CompanionApp, with_voice=with_voice)
