"""The push-to-talk key: what it is (a key plus modifiers), and a button that records one.

The key is taken from every window (and, with a global shortcut, from every app), so the
recorder refuses what typing needs: a key that types text (a letter, a digit, Space) without
Ctrl, Alt or Meta, an editing or moving key (Backspace, Delete, arrows, Tab, Enter), and the
editing shortcuts (Ctrl+V, Ctrl+Z…) or hers (Ctrl+Enter approves a card). A saved key of that
kind, from an older version, reads as the default.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QKeyCombination, Qt, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QPushButton, QWidget

DEFAULT_KEY = "F9"
_MODIFIERS = (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
              | Qt.KeyboardModifier.MetaModifier | Qt.KeyboardModifier.ShiftModifier)
_EDITING_KEYS = {Qt.Key.Key_Backspace, Qt.Key.Key_Delete, Qt.Key.Key_Tab, Qt.Key.Key_Backtab,
                 Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Up,
                 Qt.Key.Key_Down, Qt.Key.Key_Home, Qt.Key.Key_End, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown,
                 Qt.Key.Key_Insert, Qt.Key.Key_Escape, Qt.Key.Key_Menu}
"""Keys a text box needs, whatever modifiers are held (Ctrl+Backspace deletes a word)."""
_EDITING_SHORTCUTS = tuple(getattr(QKeySequence.StandardKey, name) for name in (
    "Copy", "Cut", "Paste", "Undo", "Redo", "SelectAll", "Find", "New", "Quit", "Close", "Print",
    "Save", "Open", "Bold", "Italic", "Underline", "ZoomIn", "ZoomOut", "Refresh", "HelpContents"))
"""The platform's standard shortcuts (Ctrl+V, Ctrl+Z, Ctrl+N for a new conversation…)."""
_HER_SHORTCUTS = ("Ctrl+Return", "Ctrl+Enter", "Ctrl+Shift+Return", "Ctrl+Shift+Enter")
"""The window's own: they approve a card."""
_MODIFIER_KEYS = {Qt.Key.Key_Control, Qt.Key.Key_Shift, Qt.Key.Key_Alt, Qt.Key.Key_Meta,
                  Qt.Key.Key_AltGr, Qt.Key.Key_Super_L, Qt.Key.Key_Super_R}


@dataclass(frozen=True)
class PushToTalkKey:
    key: int
    modifiers: int = 0

    @classmethod
    def parse(cls, text: str) -> PushToTalkKey:
        """From a setting like "F9" or "Ctrl+Space"; an unreadable one gives F9."""
        sequence = QKeySequence.fromString(text or DEFAULT_KEY, QKeySequence.SequenceFormat.PortableText)
        if sequence.isEmpty() or sequence[0].key() == Qt.Key.Key_unknown:
            sequence = QKeySequence(DEFAULT_KEY)
        combo = sequence[0]
        key = cls(int(combo.key().value), int(combo.keyboardModifiers().value))
        if key.key in {int(k.value) for k in _MODIFIER_KEYS} or key.refusal():
            return cls.parse(DEFAULT_KEY)  # an older version let these through
        return key

    def text(self) -> str:
        combo = QKeyCombination(Qt.KeyboardModifier(self.modifiers), Qt.Key(self.key))
        return QKeySequence(combo).toString(QKeySequence.SequenceFormat.PortableText)

    def pressed_by(self, event: QKeyEvent) -> bool:
        """The key goes down with exactly these modifiers (Ctrl+Space is not a plain Space)."""
        return event.key() == self.key and int((event.modifiers() & _MODIFIERS).value) == self.modifiers

    def types_text(self) -> bool:
        """True when pressing it in a text box would type a character."""
        if self.modifiers & int((Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
                                 | Qt.KeyboardModifier.MetaModifier).value):
            return False
        return Qt.Key.Key_Space.value <= self.key <= Qt.Key.Key_ydiaeresis.value


    def refusal(self) -> str:
        """Why this can't be the push-to-talk key ("" when it can)."""
        name = self.text()
        if self.types_text():
            return f"{name} types text, so it would be taken from what you type. Pick a key like F9, or add Ctrl or Alt."
        ctrl_alt = int((Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier).value)
        if self.modifiers & ctrl_alt == ctrl_alt and Qt.Key.Key_F1.value <= self.key <= Qt.Key.Key_F12.value:
            return f"{name} switches to a text console on Linux, so it can't be a shortcut. Pick a key like F9."
        if Qt.Key(self.key) in _EDITING_KEYS:
            return f"{name} is needed for editing text, so it can't be the push-to-talk key. Pick a key like F9."
        sequence = QKeySequence(QKeyCombination(Qt.KeyboardModifier(self.modifiers), Qt.Key(self.key)))
        standard = [binding for std in _EDITING_SHORTCUTS for binding in QKeySequence.keyBindings(std)]
        standard += [QKeySequence(text) for text in _HER_SHORTCUTS]
        if any(binding.matches(sequence) == QKeySequence.SequenceMatch.ExactMatch for binding in standard):
            return f"{name} is a shortcut you use while typing, so it can't be the push-to-talk key. Pick a key like F9."
        return ""


class KeyRecorder(QPushButton):
    """Shows the key; click it, then press the new key (with modifiers). Esc cancels."""

    changed = Signal(str)
    refused = Signal(str)
    """A sentence saying why a pressed key can't be the push-to-talk key."""

    def __init__(self, current: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._key = PushToTalkKey.parse(current)
        self.recording = False
        self.setCheckable(True)
        self.toggled.connect(self._record)
        self._show()

    def key_text(self) -> str:
        return self._key.text()

    def _record(self, on: bool) -> None:
        self.recording = on
        if on:
            self.setFocus()
            self.grabKeyboard()  # only while recording, only after a click: it never takes typing
        else:
            self.releaseKeyboard()
        self._show()

    def _show(self) -> None:
        self.setText("Press the new key… (Esc cancels)" if self.recording
                     else f"{self._key.text()} — click to change")

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        if not self.recording:
            super().keyPressEvent(event)
            return
        key = event.key()
        if key in _MODIFIER_KEYS:
            return  # wait for the key the modifiers go with
        if key == Qt.Key.Key_Escape:
            self.setChecked(False)
            return
        if key == Qt.Key.Key_unknown:
            return  # a dead key or an unmapped one: not a combination anyone can press again
        candidate = PushToTalkKey(int(key), int((event.modifiers() & _MODIFIERS).value))
        problem = candidate.refusal()
        if problem:
            self.refused.emit(problem)
            return
        self._key = candidate
        self.setChecked(False)
        self.changed.emit(candidate.text())

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802 (Qt name)
        if self.recording:
            self.setChecked(False)  # clicking elsewhere ends the recording, nothing changes
        super().focusOutEvent(event)
