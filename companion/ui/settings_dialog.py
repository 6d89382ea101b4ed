"""The Settings dialog: it edits a copy of the settings and applies it with one call on Save.

Two kinds of change take effect at once instead, because they act on live state:
switching a tool family (registry.set_toolset_enabled, saved straight away) and revoking a
saved approval (the grants file).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from companion.api_keys import store_api_key
from companion.config import Settings
from companion.safety.grants import GrantStore
from companion.tools.registry import Registry
from companion.ui.settings_keeper import SettingsKeeper
from companion.ui.settings_tabs import BrainTab, PersonalityTab, VoiceTab


class ToolsetsTab(QTreeWidget):
    """One switch per tool family, its tools listed under it."""

    def __init__(self, registry: Registry, on_switch: Callable[[str, bool], None]) -> None:
        super().__init__()
        self.setHeaderLabels(["Tool family (untick to stop her using it, at once)", ""])
        self._on_switch = on_switch
        self.families: dict[str, QTreeWidgetItem] = {}
        disabled = registry.disabled_toolsets()
        for family, tools in registry.all_toolsets().items():
            count = f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
            item = QTreeWidgetItem([family, count if tools else "switched-off plugin"])
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(0, Qt.CheckState.Unchecked if family in disabled else Qt.CheckState.Checked)
            for tool in tools:
                child = QTreeWidgetItem([tool])
                child.setFlags(Qt.ItemFlag.ItemIsEnabled)
                item.addChild(child)
            self.addTopLevelItem(item)
            self.families[family] = item
        self.expandAll()
        self.resizeColumnToContents(0)
        self.itemChanged.connect(self._changed)

    def set_enabled(self, family: str, on: bool) -> None:
        self.families[family].setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def _changed(self, item: QTreeWidgetItem, column: int) -> None:
        if item.parent() is None and column == 0:
            self._on_switch(item.text(0), item.checkState(0) == Qt.CheckState.Checked)


class ApprovalsTab(QScrollArea):
    """Saved "always allow" grants, each with Revoke."""

    def __init__(self, grants: GrantStore | None) -> None:
        super().__init__()
        self._grants = grants
        self.setWidgetResizable(True)
        self.rows: dict[str, QWidget] = {}
        inner = QWidget()
        self._column = QVBoxLayout(inner)
        if grants is None:
            self._column.addWidget(QLabel("Approvals are not available in this session."))
        else:
            if grants.notice:
                self._column.addWidget(QLabel(grants.notice))
            current = grants.current()
            entries = [("Command", line) for line in current.lines]
            entries += [("Every plain command starting with", family) for family in current.families]
            if not entries:
                self._column.addWidget(QLabel("Nothing saved: she asks before running any command."))
            for title, value in entries:
                self._add_row(title, value)
        self._column.addStretch(1)
        self.setWidget(inner)

    def _add_row(self, title: str, value: str) -> None:
        row = QWidget()
        line = QHBoxLayout(row)
        label = QLabel(f"{title}: {value}")
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setWordWrap(True)
        revoke = QPushButton("Revoke")
        revoke.clicked.connect(lambda _checked=False, v=value: self.revoke(v))
        line.addWidget(label, 1)
        line.addWidget(revoke)
        self._column.addWidget(row)
        self.rows[value] = row

    def revoke(self, value: str) -> None:
        if self._grants is not None and self._grants.revoke(value):
            row = self.rows.pop(value)
            self._column.removeWidget(row)
            row.deleteLater()


class SettingsDialog(QDialog):
    def __init__(self, keeper: SettingsKeeper, registry: Registry, *, grants: GrantStore | None = None,
                 devices: list[dict] | None = None, templates: dict[str, Path] | None = None,
                 on_edit_personality: Callable[[], None] | None = None,
                 voice_servers: list[str] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.resize(560, 480)
        self.keeper = keeper
        self.registry = registry
        settings = keeper.settings
        self.toolsets = ToolsetsTab(registry, self.switch_toolset)
        self.brain = BrainTab(settings.brain)
        self.voice = VoiceTab(settings, devices, voice_servers)
        self.personality = PersonalityTab(settings, keeper.paths, templates or {}, on_edit_personality)
        self.approvals = ApprovalsTab(grants)
        self.tabs = QTabWidget()
        for widget, title in ((self.toolsets, "Toolsets"), (self.brain, "Brain"), (self.voice, "Voice"),
                              (self.personality, "Personality"), (self.approvals, "Approvals")):
            self.tabs.addTab(widget, title)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #ffb3b3;")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def show_tab(self, name: str) -> bool:
        """Bring the tab called `name` (case-insensitive, e.g. "brain") to the front."""
        for index in range(self.tabs.count()):
            if self.tabs.tabText(index).lower() == name.lower():
                self.tabs.setCurrentIndex(index)
                return True
        return False

    def switch_toolset(self, family: str, on: bool) -> None:
        """Switch a family now and save it; the rest of the dialog still waits for Save."""
        self.registry.set_toolset_enabled(family, on)
        current = self.keeper.settings
        disabled = set(current.tools.disabled_toolsets)
        (disabled.discard if on else disabled.add)(family)
        try:
            self.keeper.apply(replace(current, tools=replace(current.tools,
                                                             disabled_toolsets=tuple(sorted(disabled)))))
        except OSError as exc:
            self.error.setText(f"I switched {family} {'on' if on else 'off'}, but couldn't save it: {exc}")

    def edited(self) -> Settings:
        """The settings as the dialog shows them; raises ValueError naming a bad value."""
        current = self.keeper.settings
        brain = self.brain.values()
        if store_api_key(brain.base_url, brain.api_key):
            brain = replace(brain, api_key="")  # it lives in the keyring, not the file
        ui = replace(current.ui, push_to_talk_key=self.voice.push_to_talk_key())
        return replace(current, brain=brain, voice=self.voice.values(), ui=ui,
                       personality=self.personality.value())

    def accept(self) -> None:
        try:
            self.keeper.apply(self.edited())
        except ValueError as exc:
            self.error.setText(f"That setting isn't right: {exc}.")
            return
        except OSError as exc:
            self.error.setText(f"I couldn't save your settings: {exc}.")
            return
        super().accept()
