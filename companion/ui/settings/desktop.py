"""Settings → Desktop: start her at login, and come up as the compact face."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QFormLayout, QLabel, QVBoxLayout, QWidget

from companion.config import UiSettings


class DesktopTab(QWidget):
    def __init__(self, ui: UiSettings, *, autostart_present: bool | None = None,
                 launcher_refusal: str | None = None) -> None:
        """`autostart_present`: whether her autostart entry is on disk (None: not known). The
        box shows what happens at login: `install-desktop --uninstall` removes the entry.
        `launcher_refusal`: why no autostart entry can be written for her (desktop_entry), or
        None; then the box is off, can't be ticked, and the sentence shows beneath it."""
        super().__init__()
        self._refused = launcher_refusal is not None
        self.start_at_login = QCheckBox("Start her when I log in")
        self.start_at_login.setChecked(ui.start_at_login and autostart_present is not False and not self._refused)
        self.start_at_login.setEnabled(not self._refused)
        self.refusal = QLabel(launcher_refusal or "")
        self.refusal.setObjectName("launcherRefusal")
        self.refusal.setWordWrap(True)
        self.refusal.setVisible(self._refused)
        self.compact = QCheckBox("Show only her small face, on top of other windows")
        self.compact.setChecked(ui.compact)
        hint = QLabel("Her launcher in the applications menu: run <code>companion install-desktop</code> once.")
        hint.setWordWrap(True)
        form = QFormLayout()
        form.addRow("At login", self.start_at_login)
        form.addRow("", self.refusal)
        form.addRow("Compact face", self.compact)
        column = QVBoxLayout(self)
        column.addLayout(form)
        column.addWidget(hint)
        column.addStretch(1)

    def values(self) -> dict:
        return {"start_at_login": self.start_at_login.isChecked() and not self._refused,
                "compact": self.compact.isChecked()}
