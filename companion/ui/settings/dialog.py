"""The Settings dialog: it edits a copy of the settings and applies everything on Save.

Save applies it all with one call (`keeper.apply`, which also switches tool families through
the Companion's apply_settings) and then revokes the grants marked for it (`revoke`, the
Companion's revoke_grants). Cancel undoes everything, because nothing was applied. The dialog
itself never touches the registry or the grants file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from companion.api_keys import store_api_key
from companion.config import McpServerSettings, McpSettings, Settings
from companion.events import NamesHeard
from companion.safety.grants import Grants
from companion.tools.registry import Registry
from companion.ui.settings.desktop import DesktopTab
from companion.ui.settings.echo import EchoControls, SpeakerTest
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.settings.mcp_server_form import McpServerForm, McpTrustSwitches
from companion.ui.settings.personality_tab import PersonalityTab
from companion.ui.settings.tabs import BrainTab, VoiceTab
from companion.ui.settings.tools import ApprovalsTab, ToolsetsTab
from companion.ui.settings.voice_preview import VoicePreview, VoicePreviewRow
from companion.ui.settings.wheel import wheel_scrolls_page


class SettingsDialog(QDialog):
    def __init__(self, keeper: SettingsKeeper, registry: Registry, *, grants: Grants | None = None,
                 grants_notice: str | None = None, revoke: Callable[[list[str]], list[str]] | None = None,
                 devices: list[dict] | None = None, templates: dict[str, Path] | None = None,
                 on_edit_personality: Callable[[], None] | None = None,
                 hearing_models: list[str] | None = None, voices: list[str] | None = None,
                 mic_level: SignalInstance | None = None, voice_servers: list[str] | None = None,
                 family_notes: dict[str, str] | None = None, test_speakers: SpeakerTest | None = None,
                 preview_voice: VoicePreview | None = None,
                 her_name: str = "", her_speed: float | None = None, names_heard: NamesHeard | None = None,
                 autostart_present: bool | None = None, launcher_refusal: str | None = None,
                 parent: QWidget | None = None) -> None:
        """`family_notes`: a line per family instead of its tool count (each MCP server's state);
        `her_name`, `her_speed`: the current personality's name and `speed:`, as the Voice tab says them;
        `names_heard`: how her hearing last wrote her names (show_names_heard keeps it current);
        `autostart_present`: whether her autostart entry is on disk (None: not known);
        `launcher_refusal`: why no autostart entry can be written for her, or None."""
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.resize(620, 500)
        self.keeper = keeper
        self._revoke = revoke
        settings = keeper.settings
        self.toolsets = ToolsetsTab(registry, settings.tools.disabled_toolsets, family_notes,
                                    enabled_plugins=settings.tools.enabled_plugins)
        self.added_servers: list[McpServerSettings] = []
        """MCP servers declared in this dialog: they start on Save, Cancel forgets them."""
        self.mcp_trust = McpTrustSwitches(settings.mcp.servers)
        """Which declared MCP servers run their tools without asking."""
        self.brain = BrainTab(settings.brain, one_run=settings.brain != keeper.saved.brain)
        self.voice = VoiceTab(settings, devices, hearing_models=hearing_models or [], voices=voices or [],
                              mic_level=mic_level, servers=voice_servers, her_name=her_name,
                              her_speed=her_speed, data_dir=keeper.paths.data_dir)
        self.voice.listening.show_heard(names_heard)
        self.voice_preview = VoicePreviewRow(self.voice, preview_voice)
        """"Preview voice": her draft voice, speed and pitch, heard before Save."""
        self.echo = EchoControls(self.voice, settings.voice, test_speakers)
        self.personality = PersonalityTab(settings, keeper.paths, templates or {}, on_edit_personality)
        self.personality.chosen.connect(self.voice.follow_personality)
        self.approvals = ApprovalsTab(grants, grants_notice,
                                      run_without_sandbox=settings.tools.run_without_sandbox)
        self.desktop = DesktopTab(settings.ui, autostart_present=autostart_present,
                                  launcher_refusal=launcher_refusal)
        self.tabs = QTabWidget()
        for widget, title in ((self.brain, "Brain"), (self.voice, "Voice"), (self._toolsets_page(), "Toolsets"),
                              (self.personality, "Personality"), (self.approvals, "Approvals"),
                              (self.desktop, "Desktop")):
            self.tabs.addTab(widget, title)
        self.error = QLabel()
        self.error.setObjectName("settingsError")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        wheel_scrolls_page(self)

    def _toolsets_page(self) -> QWidget:
        page = QWidget()
        add = QPushButton("Add MCP server…")
        add.setToolTip("Give her the tools of a Model Context Protocol server (for background jobs).")
        add.clicked.connect(self.add_mcp_server)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(add)
        self.toolsets_hint = QLabel("Untick a family to switch its tools off (from Save on).")
        self.toolsets_hint.setObjectName("hint")
        self.toolsets_hint.setWordWrap(True)
        column = QVBoxLayout(page)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.toolsets_hint)
        column.addWidget(self.toolsets)
        column.addWidget(self.mcp_trust)
        column.addLayout(row)
        return page

    def add_mcp_server(self, form: McpServerForm | None = None) -> McpServerSettings | None:
        """Ask for a server (or take the filled `form`) and list it as a new family."""
        taken = {server.name for server in (*self.keeper.settings.mcp.servers, *self.added_servers)}
        form = form or McpServerForm(taken, self)
        if form.server is None and form.exec() != QDialog.DialogCode.Accepted:
            return None
        server = form.server
        assert server is not None
        self.added_servers.append(server)
        self.toolsets.add_family(server.family, "new: it starts when you press Save")
        return server

    def show_names_heard(self, heard: NamesHeard) -> None:
        """Her names were learned anew while the dialog is open: the Listening warning follows."""
        self.voice.listening.show_heard(heard)

    def show_tab(self, name: str) -> bool:
        """Bring the tab called `name` (case-insensitive, e.g. "brain") to the front."""
        for index in range(self.tabs.count()):
            if self.tabs.tabText(index).lower() == name.lower():
                self.tabs.setCurrentIndex(index)
                return True
        return False

    def edited(self) -> Settings:
        """The settings as the dialog shows them; raises ValueError naming a bad value."""
        current = self.keeper.settings
        brain = self.brain.values()
        if store_api_key(brain.base_url, brain.api_key):
            brain = replace(brain, api_key="")  # it lives in the keyring, not the file
        ui = replace(current.ui, **self.voice.shortcuts.values(), **self.desktop.values())
        tools = replace(current.tools, disabled_toolsets=self.toolsets.disabled(),
                        enabled_plugins=self.toolsets.enabled_plugins(),
                        run_without_sandbox=self.approvals.run_without_sandbox())
        mcp = McpSettings(servers=(*self.mcp_trust.applied(current.mcp.servers), *self.added_servers))
        return replace(current, brain=brain, voice=self.echo.values(self.voice.values()), ui=ui, tools=tools,
                       mcp=mcp, personality=self.personality.value())

    def accept(self) -> None:
        try:
            edited = self.edited()
            edited = replace(edited, personality=self.personality.commit())
            self.keeper.apply(edited)
        except ValueError as exc:
            self.error.setText(f"That setting isn't right: {exc}.")
            return
        except OSError as exc:
            self.error.setText(f"I couldn't save your settings: {exc}.")
            return
        revoking = self.approvals.to_revoke()
        if revoking and self._revoke is not None:
            try:
                self._revoke(revoking)
            except OSError as exc:
                self.error.setText(f"I saved your settings, but couldn't revoke the approvals: {exc}.")
                return
        super().accept()
