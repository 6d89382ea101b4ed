"""Settings → Toolsets → "Add MCP server…": the form that declares one server, and the switches
that mark declared servers trusted (their tools run without asking).

Both only build `McpServerSettings` (validated as the settings file would be); the dialog puts
them in the copy it edits, so they apply on Save and Cancel forgets them.
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from companion.config import McpServerSettings
from companion.mcp.program import describe

__all__ = ["McpServerForm", "McpTrustSwitches", "server_from_fields"]


def server_from_fields(name: str, command_line: str, url: str, network: bool,
                       trusted: bool = False) -> McpServerSettings:
    """The declaration the fields describe; raises ValueError with a sentence for the user."""
    try:
        words = shlex.split(command_line)
    except ValueError as exc:
        raise ValueError(f"the command line has unbalanced quotes ({exc})") from exc
    command, args = (words[0], tuple(words[1:])) if words else ("", ())
    return McpServerSettings(name=name.strip(), command=command, args=args, url=url.strip(),
                             network=network, trusted=trusted)


class McpServerForm(QDialog):
    """Name, then either a command line (a stdio server) or a URL (streamable HTTP)."""

    def __init__(self, taken: set[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add MCP server")
        self._taken = taken
        self.server: McpServerSettings | None = None
        self.name = QLineEdit()
        self.name.setPlaceholderText("time")
        self.command = QLineEdit()
        self.command.setPlaceholderText("mcp-server-time --local-timezone Europe/Paris")
        self.url = QLineEdit()
        self.url.setPlaceholderText("http://127.0.0.1:8931/mcp (instead of a command)")
        self.network = QCheckBox("It needs the internet")
        self.network.setToolTip("Without this its sandbox has no network at all.")
        self.trusted = QCheckBox("I trust it: its tools run without asking me")
        self.trusted.setToolTip("Otherwise every call of its tools asks first, whatever the server "
                                "says about them.")
        self.error = QLabel()
        self.error.setObjectName("settingsError")
        self.error.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("Command", self.command)
        self.sees = QLabel()  # what its sandbox will show it (program.describe)
        self.sees.setObjectName("hint")
        self.sees.setWordWrap(True)
        self.command.textChanged.connect(self._show_what_it_sees)
        form.addRow("", self.sees)
        form.addRow("or URL", self.url)
        form.addRow("", self.network)
        form.addRow("", self.trusted)
        hint = QLabel("Its tools become the family mcp:<name>, for background jobs only. A command "
                      "runs in her sandbox, in the workspace. It starts when you press Save.")
        hint.setObjectName("hint")
        hint.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def _show_what_it_sees(self, line: str) -> None:
        try:
            words = shlex.split(line)
        except ValueError:
            words = []
        self.sees.setText(describe(words))

    def accept(self) -> None:
        try:
            server = server_from_fields(self.name.text(), self.command.text(), self.url.text(),
                                        self.network.isChecked(), self.trusted.isChecked())
        except ValueError as exc:
            self.error.setText(f"That isn't right yet: {exc}.")
            return
        if server.name in self._taken:
            self.error.setText(f"There is already a server called {server.name!r}.")
            return
        self.server = server
        super().accept()


class McpTrustSwitches(QWidget):
    """One switch per declared server: trusted servers' tools run without asking (off by default)."""

    def __init__(self, servers: tuple[McpServerSettings, ...], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.switches: dict[str, QCheckBox] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for server in servers:
            box = QCheckBox(f"Trust mcp:{server.name}: run its tools without asking me")
            box.setToolTip("Off: every call of its tools asks first, whatever the server says "
                           "about them (a tool that claims to only read may still write).")
            box.setChecked(server.trusted)
            layout.addWidget(box)
            self.switches[server.name] = box
        if not servers:
            self.setVisible(False)

    def applied(self, servers: tuple[McpServerSettings, ...]) -> tuple[McpServerSettings, ...]:
        """`servers` with the trust each switch shows now."""
        return tuple(replace(server, trusted=self.switches[server.name].isChecked())
                     if server.name in self.switches else server for server in servers)
