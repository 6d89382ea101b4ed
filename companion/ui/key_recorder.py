"""The push-to-talk key: what it is (a key plus modifiers), and a button that records one.

A key that types text (a letter, a digit, Space) without Ctrl, Alt or Meta would be taken from
every sentence typed into her text box, so the recorder refuses it and says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QKeyCombination, Qt, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QPushButton, QWidget

DEFAULT_KEY = "F9"
_MODIFIERS = (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
              | Qt.KeyboardModifier.MetaModifier | Qt.KeyboardModifier.ShiftModifier)
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
        return cls(int(combo.key().value), int(combo.keyboardModifiers().value))

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
        candidate = PushToTalkKey(int(key), int((event.modifiers() & _MODIFIERS).value))
        if candidate.types_text():
            self.refused.emit(f"{candidate.text()} types text, so it would be taken from what you type. "
                              "Pick a key like F9, or add Ctrl or Alt.")
            return
        self._key = candidate
        self.setChecked(False)
        self.changed.emit(candidate.text())

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802 (Qt name)
        if self.recording:
            self.setChecked(False)  # clicking elsewhere ends the recording, nothing changes
        super().focusOutEvent(event)
