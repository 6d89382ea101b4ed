"""The listening mode in the window: the tray's "Listening mode" menu, the Mute button, and
what the pill says calls her, all kept in step with the saved settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from companion.config import Settings
from companion.voice.addressing.wake import wake_phrase


def call_hint(name: str, settings: Settings) -> str:
    """What calls her, as the pill says it while she dozes."""
    voice = settings.voice
    phrase = f"\u201c{wake_phrase(voice.wake_word)}\u201d"
    return f"\u201c{name}\u201d or {phrase}" if voice.name_wakes and name else phrase


class ListeningControls:
    """Owned by the app: one place where the tray's mode menu meets the settings.

    `save` saves settings as the app does (a failure is a banner); `her_name` is the current
    personality's name, or "" before her core has started."""

    def __init__(self, tray, keeper, window, *, save: Callable[[Settings], None],
                 her_name: Callable[[], str]) -> None:
        self.tray, self.keeper, self.window = tray, keeper, window
        self._save, self._her_name = save, her_name
        tray.mode_chosen.connect(self.choose)
        keeper.changed.connect(lambda _settings: self.refresh())
        self.refresh()

    def choose(self, mode: str) -> None:
        """A mode from the tray: the mode is saved, and the Mute button follows (it saves mute)."""
        settings = self.keeper.settings
        voice = settings.voice.with_mode(mode)
        if voice.listening != settings.voice.listening:
            self._save(replace(settings, voice=replace(settings.voice, listening=voice.listening)))
        self.window.set_muted(voice.muted)
        self.refresh()

    def refresh(self) -> None:
        settings = self.keeper.settings
        self.tray.show_mode(settings.voice.mode)
        if self.window.mute_button.isChecked() != settings.voice.muted:
            # "Muted" chosen in Settings: the Mute button (and her microphone) follow.
            self.window.set_muted(settings.voice.muted)
        self.window.set_call_hint(call_hint(self._her_name(), settings))
