"""The settings in use: one place that applies a new copy, saves it, and tells the others."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from companion.config import Paths, Settings, keep_saved_where_untouched
from companion.settings_file import save_settings


class SettingsKeeper(QObject):
    changed = Signal(object)
    """The new Settings in use, after they were saved."""

    def __init__(self, paths: Paths, settings: Settings, parent: QObject | None = None, *,
                 saved: Settings | None = None) -> None:
        """`settings` are in use; `saved` is what settings.toml holds when they differ
        (one-run command-line options): those options are never written."""
        super().__init__(parent)
        self.paths = paths
        self._settings = settings
        self._saved = saved if saved is not None else settings

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def saved(self) -> Settings:
        """What settings.toml holds (no one-run options)."""
        return self._saved

    def apply(self, new: Settings) -> bool:
        """Save and announce `new` if it differs; False when nothing changed.

        Raises OSError when the file cannot be written (the settings in use stay as they were).
        """
        if new == self._settings:
            return False
        to_write = keep_saved_where_untouched(new, self._settings, self._saved)
        save_settings(self.paths, to_write)
        self._saved = to_write
        self._settings = new
        self.changed.emit(new)
        return True
