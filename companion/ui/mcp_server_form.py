"""Settings → Toolsets → "Add MCP server…": the form that declares one server.

It only builds a `McpServerSettings` (validated as the settings file would be); the dialog
adds it to the copy it edits, so it starts on Save and Cancel forgets it.
"""

from __future__ import annotations

import shlex

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

__all__ = ["McpServerForm", "server_from_fields"]


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
