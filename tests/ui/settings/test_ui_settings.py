"""The Settings dialog edits a copy, applies it with one call, and switches families at once."""

from __future__ import annotations

import tomllib
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from PySide6.QtCore import Qt
from ui_loop import (
    qt_gc_fixture,  # noqa: F401 (the qt_gc fixture)
    qt_loop_fixture,  # noqa: F401 (the qt_loop fixture)
)

from companion.config import Paths, Settings
from companion.safety.grants import Grants, GrantStore
from companion.settings_file import load_settings
from companion.tools.registry import Registry, builtin_modules
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.settings.tabs import check_connection


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


class MemoryKeyring(KeyringBackend):
    """A real keyring backend that keeps secrets in a dict (the system one is absent in CI)."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.secrets: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.secrets.get((service, username))

    def set_password(self, service, username, password):
        self.secrets[(service, username)] = password

    def delete_password(self, service, username):
        self.secrets.pop((service, username), None)


@pytest.fixture
def paths(tmp_path) -> Paths:
    return Paths.default(tmp_path)


@pytest.fixture
def registry() -> Registry:
    registry = Registry()
    registry.register_modules(builtin_modules())
    return registry


def _dialog(qtbot, paths, registry, settings=None, **kwargs) -> SettingsDialog:
    keeper = SettingsKeeper(paths, settings or Settings())
    dialog = SettingsDialog(keeper, registry, **kwargs)
    qtbot.addWidget(dialog)
    return dialog


def _saved(paths: Paths) -> dict:
    return tomllib.loads(paths.settings_file.read_text(encoding="utf-8"))


def test_unticking_a_family_switches_nothing_until_save(qtbot, paths, registry):
    dialog = _dialog(qtbot, paths, registry)
    family = registry.tools()["get_time"].toolset
    dialog.toolsets.set_enabled(family, False)
    assert registry.dispatchable("get_time") is not None  # the dialog never touches the registry
    assert not paths.settings_file.exists()
    dialog.accept()
    assert family in _saved(paths)["tools"]["disabled_toolsets"]
    assert dialog.keeper.settings.tools.disabled_toolsets == (family,)


def test_each_tool_is_listed_with_a_plain_description_and_its_risk(qtbot, paths, registry):
    dialog = _dialog(qtbot, paths, registry)
    family = dialog.toolsets.families[registry.tools()["get_time"].toolset]
    row = next(family.child(i) for i in range(family.childCount()) if family.child(i).text(0) == "get_time")
    assert row.text(1).endswith(".") and len(row.text(1)) > 10
    assert row.text(2) == "only looks"


def test_each_family_lists_its_tools(qtbot, paths, registry):
    dialog = _dialog(qtbot, paths, registry)
    for family, tools in registry.all_toolsets().items():
        item = dialog.toolsets.families[family]
        assert [item.child(i).text(0) for i in range(item.childCount())] == tools


def test_save_applies_the_edited_copy_in_one_call(qtbot, paths, registry):
    dialog = _dialog(qtbot, paths, registry)
    changes = []
    dialog.keeper.changed.connect(changes.append)
    dialog.brain.url.setText("http://127.0.0.1:9999/v1")
    dialog.voice.barge_in.setChecked(False)
    dialog.voice.silence.setValue(800)
    dialog.accept()
    assert len(changes) == 1
    loaded = load_settings(paths).settings
    assert loaded.brain.base_url == "http://127.0.0.1:9999/v1"
    assert loaded.voice.barge_in is False and loaded.voice.end_of_turn_silence_ms == 800


def test_save_with_nothing_changed_writes_nothing(qtbot, paths, registry):
    dialog = _dialog(qtbot, paths, registry)
    dialog.accept()
    assert not paths.settings_file.exists()


def test_a_bad_value_is_named_and_nothing_is_saved(qtbot, paths, registry):
    dialog = _dialog(qtbot, paths, registry)
    dialog.show()
    dialog.brain.url.setText("localhost:11434")
    dialog.accept()
    assert "must start with http://" in dialog.error.text()
    assert dialog.isVisible()
    assert not paths.settings_file.exists()


def test_the_api_key_goes_to_the_keyring_when_there_is_one(qtbot, paths, registry):
    previous = keyring.get_keyring()
    store = MemoryKeyring()
    keyring.set_keyring(store)
    try:
        dialog = _dialog(qtbot, paths, registry)
        assert "system keyring" in dialog.brain.key_note.text()
        dialog.brain.key.setText("sk-secret")
        dialog.accept()
    finally:
        keyring.set_keyring(previous)
    assert store.secrets[("companion", Settings().brain.base_url)] == "sk-secret"
    # Only the key changed, and it lives in the keyring: the settings file is left alone.
    assert not paths.settings_file.exists()


def test_without_a_keyring_the_key_is_kept_in_the_settings_file_and_the_dialog_says_so(
        qtbot, paths, registry):
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        dialog = _dialog(qtbot, paths, registry)
        assert "No system keyring" in dialog.brain.key_note.text()
        dialog.brain.key.setText("sk-secret")
        dialog.accept()
    finally:
        keyring.set_keyring(previous)
    assert _saved(paths)["brain"]["api_key"] == "sk-secret"
    assert paths.settings_file.stat().st_mode & 0o077 == 0  # only the owner can read it


def test_each_grant_is_shown_in_full_and_revoke_happens_on_save(qtbot, paths, registry):
    grants = GrantStore(paths.approvals_file)
    long_line = "ls -la projects/companion/assets/sounds/recordings/2026/december/morning-standup-meeting"
    grants.add_line(long_line)
    revoked: list[list[str]] = []
    dialog = _dialog(qtbot, paths, registry, grants=grants.current(),
                     revoke=lambda values: revoked.append(values) or values)
    assert dialog.approvals.rows[long_line].text.text() == long_line
    dialog.approvals.revoke(long_line)
    assert revoked == []  # nothing happens before Save
    dialog.accept()
    assert revoked == [[long_line]]


def test_cancel_leaves_grants_alone(qtbot, paths, registry):
    revoked: list[list[str]] = []
    dialog = _dialog(qtbot, paths, registry, grants=Grants(lines=("git status",)),
                     revoke=lambda values: revoked.append(values) or values)
    dialog.approvals.rows["git status"].button.click()
    dialog.reject()
    assert revoked == []


def test_switching_to_a_template_uses_a_copy_of_it(qtbot, paths, registry):
    from companion.persona.store import shipped_templates

    templates = shipped_templates()
    dialog = _dialog(qtbot, paths, registry, templates=templates)
    other = next(name for name in templates if name != "default")
    dialog.personality.template.setCurrentIndex(dialog.personality.template.findData(other))
    dialog.personality.use_template()
    dialog.accept()
    chosen = load_settings(paths).settings.personality
    assert chosen.endswith(f"personality-{other}.md")
    assert Path(chosen).read_text(encoding="utf-8") == templates[other].read_text(encoding="utf-8")


def test_test_connection_says_the_model_is_ready(qtbot, paths, registry, scripted_brain, qt_loop):
    settings = Settings()
    dialog = _dialog(qtbot, paths, registry, settings)
    dialog.brain.url.setText(scripted_brain.url)
    dialog.brain.model.setCurrentText("qwen2.5:3b")
    assert qt_loop(dialog.brain.test()) is True
    assert dialog.brain.result.text().startswith("✓ Connected")
    assert dialog.brain.model.findText("scripted") >= 0


async def test_test_connection_names_a_missing_model_and_an_unreachable_brain(scripted_brain):
    from companion.config import BrainSettings

    ok, sentence, _ = await check_connection(BrainSettings(base_url=scripted_brain.url, model="llama9"))
    assert not ok and "no model called llama9" in sentence and "qwen2.5:3b" in sentence
    ok, sentence, _ = await check_connection(BrainSettings(base_url="http://127.0.0.1:9/v1"))
    assert not ok and "can't reach my brain" in sentence


def test_the_toolset_switch_is_a_checkbox_per_family(qtbot, paths, registry):
    dialog = _dialog(qtbot, paths, registry)
    for item in dialog.toolsets.families.values():
        assert item.flags() & Qt.ItemFlag.ItemIsUserCheckable


async def test_the_voice_tab_edits_her_wyoming_servers_and_shows_what_they_said(
        qtbot, paths, registry, wyoming_hearing, unused_port, piper_voice):
    from companion.events import EventBus
    from companion.voice.fallback import RemoteHearing, RemoteVoice, server_lines
    from companion.voice.remote.hearing import WyomingTranscriber
    from companion.voice.remote.speaking import WyomingSynthesizer

    bus = EventBus()
    ears = RemoteHearing(WyomingTranscriber(wyoming_hearing.uri), None, bus)
    mouth = RemoteVoice(WyomingSynthesizer(f"tcp://127.0.0.1:{unused_port}"), lambda: piper_voice, bus)
    await ears.start()
    await mouth.start()
    settings = Settings()
    dialog = _dialog(qtbot, paths, registry, settings, voice_servers=server_lines(ears, mouth))
    hearing, speaking = (label.text() for label in dialog.voice.server_lines)
    assert hearing.startswith(f"Hearing: {wyoming_hearing.uri} runs faster-whisper ")
    assert "test round trip" in hearing
    assert speaking == (f"Speaking: tcp://127.0.0.1:{unused_port} isn't answering, so her own engine on "
                        "this computer stands in.")
    assert dialog.voice.hearing_server.text() == "local"
    dialog.voice.hearing_server.setText(wyoming_hearing.uri)
    dialog.voice.voice_server.setText("")  # empty means this computer
    dialog.accept()
    saved = _saved(paths)["voice"]
    assert saved["hearing"] == wyoming_hearing.uri and saved["speaking"] == "local"


def test_a_voice_server_that_is_not_a_wyoming_address_is_named_and_nothing_is_saved(qtbot, paths, registry):
    dialog = _dialog(qtbot, paths, registry)
    dialog.show()
    dialog.voice.voice_server.setText("http://homeserver:10200")
    dialog.accept()
    assert 'voice.speaking must be "local" or a Wyoming server like tcp://host:10200' in dialog.error.text()
    assert not paths.settings_file.exists()
