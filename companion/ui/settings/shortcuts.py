"""Settings → Voice → "Push-to-talk and shortcuts": the key, where it works, the compact-mode key."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QFormLayout, QLabel

from companion.config import UiSettings
from companion.ui.key_recorder import KeyRecorder

SECTION = "Push-to-talk and shortcuts"
DEFAULT_COMPACT_KEY = "Ctrl+Shift+F9"


class ShortcutRows:
    """The section's widgets; `fill(form)` lays them out, `values()` reads them back for UiSettings."""

    def __init__(self, ui: UiSettings, push_to_talk: KeyRecorder, key_problem: QLabel) -> None:
        self.push_to_talk = push_to_talk
        self.key_problem = key_problem
        self.everywhere = QCheckBox("Works in every window, not only hers")
        self.everywhere.setChecked(ui.global_push_to_talk)
        self.everywhere.setToolTip("Through the desktop's global shortcuts portal, or an X11 key grab")
        self.status = QLabel()
        self.status.setObjectName("shortcutStatus")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.compact_key = KeyRecorder(ui.compact_shortcut or DEFAULT_COMPACT_KEY)
        self.compact_key.refused.connect(self.key_problem.setText)
        self.compact_key.changed.connect(lambda _key: self.key_problem.clear())
        self.set_status("")

    def fill(self, form: QFormLayout) -> None:
        form.addRow("Push-to-talk key", self.push_to_talk)
        form.addRow("", self.everywhere)
        form.addRow("Works", self.status)
        form.addRow("Compact face key", self.compact_key)
        form.addRow("", self.key_problem)

    def set_status(self, status: str) -> None:
        """Where push-to-talk works now ("from any window (desktop portal)", …)."""
        self.status.setText(status or "Checked when she starts.")

    def values(self) -> dict:
        return {"push_to_talk_key": self.push_to_talk.key_text(),
                "global_push_to_talk": self.everywhere.isChecked(),
                "compact_shortcut": self.compact_key.key_text()}
