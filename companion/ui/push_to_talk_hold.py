"""Whether the push-to-talk key is held: pressed in her window (in any of its widgets), or from
any window (the desktop's portal or an X11 grab, `hold`). Each change is said once, as `changed`.

A key held down in her window and let go in another (Alt+Tab while holding it) is never seen
coming up: the hold ends when her window loses the focus, or everything said after it would be
hers for as long as the key seemed held."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QKeyEvent

from companion.ui.key_recorder import PushToTalkKey

__all__ = ["PushToTalkHold"]


class PushToTalkHold(QObject):
    """An event filter for the whole application: the key's presses and releases while
    `active()` (her window has the focus) are taken, and none of them reaches a text box."""

    changed = Signal(bool)
    """True when the key goes down, False when it comes up."""

    def __init__(self, key_text: str, *, active: Callable[[], bool], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.key = PushToTalkKey.parse(key_text)
        self.down = False
        self._active = active
        self._in_window = False
        """The hold began with a key press in her window (not from the desktop's shortcut)."""

    @property
    def text(self) -> str:
        """The key as the user reads it (a refused saved key reads as the default)."""
        return self.key.text()

    def set_key(self, key_text: str) -> None:
        self.key = PushToTalkKey.parse(key_text)

    def hold(self, down: bool) -> None:
        """The key from any window: said only when it changes."""
        self._in_window = False
        self._set(down)

    def _set(self, down: bool) -> None:
        if down != self.down:
            self.down = down
            self.changed.emit(down)

    def eventFilter(self, _watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        kind = event.type()
        if kind in (QEvent.Type.WindowDeactivate, QEvent.Type.ApplicationDeactivate):
            if self.down and self._in_window:
                self._in_window = False
                self._set(False)  # its release goes to another window: she would never hear it
            return False
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease) or not self._active():
            return False
        key_event: QKeyEvent = event  # type: ignore[assignment]
        down = kind == QEvent.Type.KeyPress
        # Down only with its exact modifiers (Ctrl+Space leaves a plain Space to the text box);
        # up whenever its key is released, whatever was let go first.
        mine = self.key.pressed_by(key_event) if down else (key_event.key() == self.key.key and self.down)
        if not mine:
            return False
        if not key_event.isAutoRepeat():
            self._in_window = down
            self._set(down)
        return True  # held keys repeat: none of it reaches the text box
