"""The settings in use: one place that applies a new copy, saves it, and tells the others."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from companion.config import Paths, Settings, save_settings


class SettingsKeeper(QObject):
    changed = Signal(object)
    """The new Settings, after they were saved."""

    def __init__(self, paths: Paths, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.paths = paths
        self._settings = settings

    @property
    def settings(self) -> Settings:
        return self._settings

    def apply(self, new: Settings) -> bool:
        """Save and announce `new` if it differs; False when nothing changed.

        Raises OSError when the file cannot be written (the settings in use stay as they were).
        """
        if new == self._settings:
            return False
        save_settings(self.paths, new)
        self._settings = new
        self.changed.emit(new)
        return True
