"""Settings' Toolsets and Approvals tabs: they only record what the user wants.

Nothing here switches a family, loads a plugin or revokes a grant: the dialog applies all three
on Save, through the settings (tools.disabled_toolsets, tools.enabled_plugins) and the
Companion (`revoke_grants`), and Cancel leaves everything as it was.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from companion.safety.grants import Grants
from companion.tools.registry import PluginInfo, Registry

RISK_WORDS = {
    "read": "only looks",
    "write": "changes files",
    "exec": "runs commands (asks you first)",
    "network": "uses the internet",
}
"""Each RISK in plain words."""
TEXT_MARGIN = 4
"""Pixels the style keeps between a cell's edge and its text, each side."""
INTERNET_FAMILIES = {"web": "uses the internet (only looks)"}
"""Families whose read tools look on the internet, not only at this computer."""


def risk_words(risk: str, toolset: str) -> str:
    """What a tool may do, as the Toolsets tab says it."""
    if risk == "read" and toolset in INTERNET_FAMILIES:
        return INTERNET_FAMILIES[toolset]
    return RISK_WORDS.get(risk, risk)


class _WrappingDelegate(QStyledItemDelegate):
    """Rows as tall as their wrapped text at the column's width (Qt's own size hint is one
    line, so a long description was cut with "…" whatever the window's width)."""

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:  # noqa: N802 (Qt name)
        size = super().sizeHint(option, index)
        view = self.parent()
        text = str(index.data() or "")
        if index.column() != 1 or not text:
            return size
        width = max(40, view.columnWidth(1) - 2 * TEXT_MARGIN)
        wrapped = option.fontMetrics.boundingRect(QRect(0, 0, width, 100_000),
                                                  int(Qt.TextFlag.TextWordWrap), text)
        return QSize(size.width(), max(size.height(), wrapped.height() + 6))


def plain_description(schema: dict) -> str:
    """The first sentence of a tool's description, for people rather than models."""
    text = " ".join(str(schema.get("description", "")).split())
    first = text.split(". ")[0].rstrip(".")
    return (first + ".") if first else ""


class ToolsetsTab(QTreeWidget):
    """One switch per tool family; under it each tool, what it does, and its risk.

    A plugin's switch is the user's opt-in (tools.enabled_plugins): one never enabled is shown
    off, with the file its code is in, and is imported only after it is ticked and saved.
    """

    def __init__(self, registry: Registry, disabled: tuple[str, ...],
                 notes: dict[str, str] | None = None, *, enabled_plugins: tuple[str, ...] = ()) -> None:
        """`notes`: a line about a family instead of its tool count (an MCP server's state)."""
        super().__init__()
        # Short headings, whole at any width: how to switch a family off is said above the list.
        self.setHeaderLabels(["Family · tool", "What it does", "Risk"])
        self.setToolTip("Untick a family to stop her using its tools (from Save on).")
        self.families: dict[str, QTreeWidgetItem] = {}
        self.plugins = registry.plugins()
        """Plugins found, by family: their switches become tools.enabled_plugins."""
        specs = registry.tools()
        notes = notes or {}
        for family, tools in registry.all_toolsets().items():
            count = f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
            plugin = self.plugins.get(family)
            if plugin is not None:
                on = family in enabled_plugins and family not in disabled
                item = self.add_family(family, plugin_note(plugin, on, count), on=on)
                item.setToolTip(1, f"Its code: {plugin.source}")
            else:
                item = self.add_family(family, notes.get(family) or count, on=family not in disabled)
            for tool in tools:
                spec = specs.get(tool)
                description = plain_description(spec.schema) if spec else ""
                risk = risk_words(spec.risk, spec.toolset) if spec else ""
                child = QTreeWidgetItem([tool, description, risk])
                child.setToolTip(1, str(spec.schema.get("description", "")) if spec else "")
                child.setFlags(Qt.ItemFlag.ItemIsEnabled)
                item.addChild(child)
        self.expandAll()
        # Names and risks get the width they need (they were cut at 150 px and at larger text);
        # what a tool does takes the rest and wraps onto more lines.
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.setWordWrap(True)
        self.setUniformRowHeights(False)
        self.setItemDelegate(_WrappingDelegate(self))
        self.setTextElideMode(Qt.TextElideMode.ElideNone)
        # A wider or narrower column re-wraps the descriptions: rows are measured again.
        header.sectionResized.connect(lambda *_: self.scheduleDelayedItemsLayout())

    def add_family(self, family: str, note: str, *, on: bool = True) -> QTreeWidgetItem:
        """A family row (a switch) with a line about it; its tools go under it."""
        item = QTreeWidgetItem([family, note, ""])
        item.setToolTip(1, note)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self.addTopLevelItem(item)
        self.families[family] = item
        return item

    def set_enabled(self, family: str, on: bool) -> None:
        self.families[family].setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def disabled(self) -> tuple[str, ...]:
        """The families switched off, as the dialog shows them now (plugins: see enabled_plugins)."""
        return tuple(sorted(name for name, item in self.families.items()
                            if item.checkState(0) != Qt.CheckState.Checked and name not in self.plugins))

    def enabled_plugins(self) -> tuple[str, ...]:
        """The plugin families ticked, as the dialog shows them now."""
        return tuple(sorted(name for name, item in self.families.items()
                            if item.checkState(0) == Qt.CheckState.Checked and name in self.plugins))


def plugin_note(plugin: PluginInfo, on: bool, count: str) -> str:
    """A plugin's line: whether its code runs, and where that code is."""
    if not on:
        return f"plugin, off: never loaded until you tick it and press Save ({plugin.source})"
    if plugin.loaded:
        return f"plugin, {count} ({plugin.source})"
    if plugin.problem:
        return f"plugin, enabled but not loaded: {plugin.problem} ({plugin.source})"
    return f"plugin, loads when you press Save ({plugin.source})"


NOTHING_SAVED = ("Nothing saved. She asks before running anything except a short list of plain "
                 "commands (ls, cat, grep, mkdir, \u2026) whose paths all stay in the workspace.")
"""The Approvals tab with no grants: what still runs without asking."""


class GrantRow(QWidget):
    """One saved grant in full (wrapped, selectable) with Revoke, which Save carries out."""

    def __init__(self, title: str, value: str) -> None:
        super().__init__()
        self.value = value
        self.revoking = False
        line = QHBoxLayout(self)
        column = QVBoxLayout()
        heading = QLabel(title)
        heading.setObjectName("hint")
        self.text = QLabel(value)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        self.text.setWordWrap(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(heading)
        column.addWidget(self.text)
        self.button = QPushButton("Revoke")
        self.button.clicked.connect(self.toggle)
        line.addLayout(column, 1)
        line.addWidget(self.button, 0, Qt.AlignmentFlag.AlignTop)

    def toggle(self) -> None:
        self.revoking = not self.revoking
        self.button.setText("Keep" if self.revoking else "Revoke")
        font = self.text.font()
        font.setStrikeOut(self.revoking)
        self.text.setFont(font)
        self.text.setToolTip("Revoked when you press Save" if self.revoking else "")


class ApprovalsTab(QScrollArea):
    """Saved "always allow" grants, each shown in full with Revoke."""

    def __init__(self, grants: Grants | None, notice: str | None = None, *,
                 run_without_sandbox: bool = False) -> None:
        super().__init__()
        self.setWidgetResizable(True)
        self.rows: dict[str, GrantRow] = {}
        inner = QWidget()
        self._column = QVBoxLayout(inner)
        self.unsandboxed = QCheckBox("Run commands without a sandbox")
        self.unsandboxed.setChecked(run_without_sandbox)
        self.sandbox_note = _wrapped(_sandbox_note())
        self._column.addWidget(self.unsandboxed)
        self._column.addWidget(self.sandbox_note)
        if grants is None:
            self._column.addWidget(QLabel("Approvals are not available until she has started."))
        else:
            if notice:
                self._column.addWidget(_wrapped(notice))
            entries = [("Run this exact command without asking", line) for line in grants.lines]
            entries += [("Run any plain command starting with", family) for family in grants.families]
            if not entries:
                self._column.addWidget(_wrapped(NOTHING_SAVED))
            for title, value in entries:
                row = GrantRow(title, value)
                self._column.addWidget(row)
                self.rows[value] = row
        self._column.addStretch(1)
        self.setWidget(inner)

    def revoke(self, value: str) -> None:
        """Mark `value` to be revoked on Save (as its Revoke button does)."""
        row = self.rows[value]
        if not row.revoking:
            row.toggle()

    def to_revoke(self) -> list[str]:
        return [value for value, row in self.rows.items() if row.revoking]

    def run_without_sandbox(self) -> bool:
        return self.unsandboxed.isChecked()


def _sandbox_note() -> str:
    from companion.safety.sandbox import probe

    reason = probe.unavailable_reason()
    if reason is None:
        return ("Every command and program she runs is sandboxed (bubblewrap): your system is "
                "read-only to it, your home is hidden, only the workspace can change, and it has no "
                "internet unless you approve a card that says it needs it. This switch only matters "
                "where the sandbox can't run.")
    return (f"{reason} So she doesn't offer to run commands or code. Switching this on lets her, "
            "WITHOUT a sandbox: a command you approve then runs as you and can read, change or "
            "delete any of your files and use the internet. The approval cards are then the only "
            f"protection. {probe.unavailable_fix()}")


def _wrapped(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    return label
