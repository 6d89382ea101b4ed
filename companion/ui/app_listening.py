"""The listening mode in the window: the tray's "Listening mode" menu, the Mute button, and
what the pill says calls her, all kept in step with the saved settings."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from companion.config import Settings
from companion.voice.addressing.wake import wake_phrase

if TYPE_CHECKING:
    from companion.ui.app import CompanionApp


def call_hint(name: str, settings: Settings) -> str:
    """What calls her, as the pill says it while she dozes."""
    voice = settings.voice
    phrase = f"\u201c{wake_phrase(voice.wake_word)}\u201d"
    return f"\u201c{name}\u201d or {phrase}" if voice.name_wakes and name else phrase


class ListeningControls:
    """Owned by the app: one place where the tray's mode menu meets the settings."""

    def __init__(self, app: CompanionApp) -> None:
        self.app = app
        app.tray.mode_chosen.connect(self.choose)
        app.keeper.changed.connect(lambda _settings: self.refresh())
        self.refresh()

    def choose(self, mode: str) -> None:
        """A mode from the tray: the mode is saved, and the Mute button follows (it saves mute)."""
        app = self.app
        voice = app.keeper.settings.voice.with_mode(mode)
        if voice.listening != app.keeper.settings.voice.listening:
            app._save(replace(app.keeper.settings, voice=replace(app.keeper.settings.voice,
                                                                   listening=voice.listening)))
        app.window.set_muted(voice.muted)
        self.refresh()

    def refresh(self) -> None:
        app = self.app
        settings = app.keeper.settings
        app.tray.show_mode(settings.voice.mode)
        if app.window.mute_button.isChecked() != settings.voice.muted:
            # "Muted" chosen in Settings: the Mute button (and her microphone) follow.
            app.window.set_muted(settings.voice.muted)
        companion = getattr(app, "companion", None)
        store = getattr(companion, "personality", None)
        name = store.current.name if store is not None else ""
        app.window.set_call_hint(call_hint(name, settings))
