"""The windows she opens beside her own: Settings, the conversations list, the notes and the
personality editor, each built from what the running core offers."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from PySide6.QtCore import Qt
from shiboken6 import isValid


class AppDialogs:
    """Owned by the app. `core()` and `voice()` are the running core and voice (or None);
    `settings_opened(dialog)`, `reopen(conversation_id)` and `personality_applied()` are how
    the app hears what the user did in them; `autostart_present()` whether her autostart
    entry is on disk, `launcher_refusal()` why none can be written (or None)."""

    def __init__(self, window, keeper, bridge, paths, *, core: Callable, voice: Callable,
                 settings_opened: Callable, reopen: Callable[[int], None],
                 personality_applied: Callable[[], None], autostart_present: Callable[[], bool | None],
                 launcher_refusal: Callable[[], str | None] = lambda: None) -> None:
        self.window, self.keeper, self.bridge, self.paths = window, keeper, bridge, paths
        self._core, self._voice = core, voice
        self._settings_opened, self._reopen, self._applied = settings_opened, reopen, personality_applied
        self._autostart_present = autostart_present
        self._launcher_refusal = launcher_refusal
        self.settings = None
        self.conversations = None
        self.notes = None
        self.editor = None
        """The personality editor, kept between openings (unsaved edits stay)."""
        self.names_heard = None
        """How her hearing last wrote her names (events.NamesHeard): Settings opens with it."""
        bridge.names_heard.connect(self._names_heard)

    def open_settings(self, tab: str = "") -> None:
        from companion.persona.store import shipped_templates
        from companion.ui.settings.dialog import SettingsDialog
        from companion.voice.models.files import downloaded_hearing_models, downloaded_voices

        devices = None
        with contextlib.suppress(Exception):
            from companion.voice.sound.devices import list_devices

            devices = list_devices()
        core, voice = self._core(), self._voice()
        registry = core.registry if core is not None else None
        grants, notice = core.saved_grants() if core is not None and core.gate is not None else (None, None)
        dialog = SettingsDialog(
            self.keeper, registry or _empty_registry(), grants=grants, grants_notice=notice,
            revoke=core.revoke_grants if core is not None else None, devices=devices,
            templates=shipped_templates(), on_edit_personality=self.open_personality_editor,
            hearing_models=downloaded_hearing_models(self.paths.models_dir),
            voices=downloaded_voices(self.paths.models_dir),
            mic_level=self.bridge.mic_level if voice is not None else None,
            voice_servers=voice.session.servers() if voice is not None and voice.session else None,
            family_notes=core.family_notes() if core is not None else None,
            test_speakers=voice.check_speakers if voice is not None else None,
            preview_voice=voice.preview_voice if voice is not None else None,
            her_name=core.personality.current.name if core is not None and core.personality else "",
            her_speed=core.personality.current.speed if core is not None and core.personality else None,
            names_heard=self.names_heard,
            autostart_present=self._autostart_present(), launcher_refusal=self._launcher_refusal(),
            parent=self.window)
        if voice is not None:
            # A reading is no turn for her: whichever session runs when it starts and ends.
            dialog.voice.voices.enrolling = lambda reading: voice.session and voice.session.enrolling(reading)
        if tab:
            dialog.show_tab(tab)  # the banner's "Open Settings" lands where it talks about
        dialog.finished.connect(lambda _result, closed=dialog: self._settings_closed(closed))
        self.settings = dialog
        self._settings_opened(dialog)
        dialog.open()  # never exec(): a nested loop would stall asyncio

    def _names_heard(self, heard) -> None:
        self.names_heard = heard
        if self.settings is not None:
            self.settings.show_names_heard(heard)  # an open dialog follows; a closed one opens anew with it

    def open_conversations(self) -> None:
        from companion.ui.dialogs.conversations import ConversationsDialog

        core = self._core()
        if core is None or core.store is None:
            return
        dialog = ConversationsDialog(core.store.conversations, core.conversation_id, parent=self.window)
        dialog.chosen.connect(self._reopen)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.conversations = dialog

    def open_notes(self) -> None:
        from companion.ui.dialogs.notes import NotesDialog

        dialog = NotesDialog(self.paths.data_dir, parent=self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.notes = dialog

    def open_personality_editor(self) -> None:
        from companion.ui.dialogs.personality_editor import PersonalityEditor

        core = self._core()
        if core is None or core.personality is None:
            return
        if self.editor is not None and self.editor.path != core.personality.path:
            self.editor.close()  # Settings switched her to another personality file
            self.editor.deleteLater()
            self.editor = None
        # Opened from Settings (modal), it opens in front of Settings, modal over it; from the
        # menu, beside her window.
        settings = self.settings if self.settings is not None and isValid(self.settings) \
            and self.settings.isVisible() else None
        owner = settings or self.window
        if self.editor is None:
            self.editor = PersonalityEditor(core.personality, core.registry, preview=self._preview_lines,
                                            parent=owner)
            self.editor.applied.connect(self._applied)
            self.editor.setWindowModality(Qt.WindowModality.WindowModal if settings else Qt.WindowModality.NonModal)
        elif self.editor.parentWidget() is not owner:
            self._move_editor(owner, modal=settings is not None)
        self.editor.show()
        self.editor.raise_()
        self.editor.activateWindow()

    def _move_editor(self, owner, *, modal: bool) -> None:
        """Give the editor another parent window, keeping its unsaved edits (and it shown, if it was)."""
        editor = self.editor
        shown = editor.isVisible()
        editor.setParent(owner, editor.windowFlags())  # hides it
        editor.setWindowModality(Qt.WindowModality.WindowModal if modal else Qt.WindowModality.NonModal)
        if shown:
            editor.show()

    def _settings_closed(self, dialog) -> None:
        # The editor must outlive the Settings dialog it was opened over (a new one replaces it).
        if self.editor is not None and self.editor.parentWidget() is dialog:
            self._move_editor(self.window, modal=False)

    def editing(self) -> bool:
        """The personality editor is open (Quit asks it first: unsaved edits are never lost)."""
        return self.editor is not None and self.editor.isVisible()

    def _preview_lines(self, lines: list[tuple[str, str]]) -> bool:
        voice = self._voice()
        return voice is not None and voice.say_preview(lines)


def _empty_registry():
    from companion.tools.registry import Registry

    return Registry()
