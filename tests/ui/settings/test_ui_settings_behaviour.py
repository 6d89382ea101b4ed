"""Settings behave: Save applies everything through the Companion, Cancel undoes everything,
one-run command-line options are never saved, and the pickers, key recorder and meter work."""

from __future__ import annotations

import tomllib

import pytest
from app_support import app_config
from PySide6.QtCore import Qt
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.cli import build_parser, load_config
from companion.config import Paths, Settings
from companion.safety.grants import GrantStore
from companion.tools.registry import Registry, builtin_modules
from companion.ui.bridge import EventBridge
from companion.ui.key_recorder import KeyRecorder, PushToTalkKey
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.window import CompanionWindow


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _saved(paths: Paths) -> dict:
    return tomllib.loads(paths.settings_file.read_text(encoding="utf-8"))


def test_cancel_undoes_a_toolset_switch_and_save_applies_it_through_the_companion(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):  # noqa: F811 (fixture)
    app = make_app(app_config(tmp_path, scripted_brain.url))
    qt_loop(app.start())
    registry = app.companion.registry
    family = registry.tools()["get_time"].toolset
    app.open_settings()
    app.settings_dialog.toolsets.set_enabled(family, False)
    assert registry.dispatchable("get_time") is not None
    app.settings_dialog.reject()
    assert registry.dispatchable("get_time") is not None
    assert not app.config.paths.settings_file.exists()
    app.open_settings()
    assert app.settings_dialog.toolsets.families[family].checkState(0) == Qt.CheckState.Checked
    app.settings_dialog.toolsets.set_enabled(family, False)
    app.settings_dialog.accept()
    assert registry.dispatchable("get_time") is None
    assert family in _saved(app.config.paths)["tools"]["disabled_toolsets"]


def test_a_revoked_grant_is_forgotten_on_save_and_kept_on_cancel(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):  # noqa: F811 (fixture)
    config = app_config(tmp_path, scripted_brain.url)
    GrantStore(config.paths.approvals_file).add_line("git status")
    app = make_app(config)
    qt_loop(app.start())
    app.open_settings()
    app.settings_dialog.approvals.rows["git status"].button.click()
    app.settings_dialog.reject()
    assert app.companion.saved_grants()[0].lines == ("git status",)
    app.open_settings()
    app.settings_dialog.approvals.rows["git status"].button.click()
    app.settings_dialog.accept()
    assert app.companion.saved_grants()[0].lines == ()
    assert GrantStore(config.paths.approvals_file).current().lines == ()


def test_command_line_options_are_for_one_run_and_never_saved(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):  # noqa: F811 (fixture)
    workspace = tmp_path / "one-run-workspace"
    args = build_parser().parse_args(["--config-dir", str(tmp_path / "config"), "--brain-url", scripted_brain.url,
                                      "--model", "one-run-model", "--workspace", str(workspace)])
    config = load_config(args)
    app = make_app(config)
    qt_loop(app.start())
    app.set_muted(True)  # saves a setting
    app.open_settings()
    dialog = app.settings_dialog
    assert "command line" in dialog.brain.findChild(type(dialog.error), "hint").text()
    dialog.voice.barge_in.setChecked(not dialog.voice.barge_in.isChecked())
    dialog.accept()
    saved = _saved(config.paths)
    assert saved["voice"]["muted"] is True
    assert "base_url" not in saved.get("brain", {}) or saved["brain"]["base_url"] != scripted_brain.url
    assert saved.get("brain", {}).get("model") != "one-run-model"
    assert saved.get("tools", {}).get("workspace") != str(workspace)
    assert app.keeper.settings.brain.model == "one-run-model"  # still in use for this run
    # A field the user does change is saved, even one the command line set.
    app.open_settings()
    app.settings_dialog.brain.model.setCurrentText("chosen-model")
    app.settings_dialog.accept()
    assert _saved(config.paths)["brain"]["model"] == "chosen-model"


def test_the_brain_banner_opens_settings_on_the_brain_tab(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):  # noqa: F811 (fixture)
    app = make_app(app_config(tmp_path, scripted_brain.url))
    qt_loop(app.start())
    app.window.show_error("brain", "unreachable", "I can't reach my brain.")
    app.window.banners.banner("brain").buttons["Open Settings"].click()
    assert app.settings_dialog.tabs.currentWidget() is app.settings_dialog.brain


@pytest.fixture
def dialog_for(qtbot, tmp_path):
    def make(**kwargs) -> SettingsDialog:
        registry = Registry()
        registry.register_modules(builtin_modules())
        dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), kwargs.pop("settings", Settings())),
                                registry, **kwargs)
        qtbot.addWidget(dialog)
        return dialog
    return make


def test_the_pickers_list_the_installed_and_downloaded_models(dialog_for):
    dialog = dialog_for(hearing_models=["base.en"], voices=["en_GB-alba-medium"])
    hearing = [dialog.voice.hearing.itemText(i) for i in range(dialog.voice.hearing.count())]
    assert hearing[0].endswith("(installed)") and "base.en (downloaded)" in hearing
    dialog.voice.hearing.setCurrentText("base.en (downloaded)")
    dialog.voice.voice_name.setCurrentText("en_GB-alba-medium (downloaded)")
    values = dialog.voice.values()
    assert (values.hearing_model, values.voice) == ("base.en", "en_GB-alba-medium")
    dialog.voice.hearing.setCurrentIndex(0)
    assert dialog.voice.values().hearing_model == ""  # the installed pack


def test_downloaded_models_are_found_in_the_models_folder(tmp_path):
    from companion.voice.models.files import downloaded_hearing_models, downloaded_voices

    (tmp_path / "whisper" / "base.en").mkdir(parents=True)
    (tmp_path / "whisper" / "base.en" / "model.bin").write_bytes(b"x")
    (tmp_path / "whisper" / "half-done").mkdir()
    (tmp_path / "piper" / "en_GB-alba-medium").mkdir(parents=True)
    (tmp_path / "piper" / "en_GB-alba-medium" / "en_GB-alba-medium.onnx").write_bytes(b"x")
    assert downloaded_hearing_models(tmp_path) == ["base.en"]
    assert downloaded_voices(tmp_path) == ["en_GB-alba-medium"]


def test_the_microphone_meter_follows_the_level(dialog_for, qtbot):
    bridge = EventBridge()
    dialog = dialog_for(mic_level=bridge.mic_level)
    with qtbot.waitSignal(bridge.mic_level, timeout=2000):
        bridge.deliver_mic_level(0.42)
    assert dialog.voice.level.value() == 42


def test_the_voice_tab_takes_new_rows_in_its_sections(dialog_for):
    from PySide6.QtWidgets import QCheckBox

    dialog = dialog_for()
    switch = QCheckBox("Cancel my echo")
    dialog.voice.add_row("Devices", "Echo", switch)
    assert switch.parent() is not None and switch.isVisibleTo(dialog.voice)


def test_the_personality_tab_preselects_the_template_in_use_and_copies_only_on_save(dialog_for, tmp_path):
    from companion.persona.store import shipped_templates

    templates = shipped_templates()
    other = next(name for name in templates if name != "default")
    copy = tmp_path / f"personality-{other}.md"
    dialog = dialog_for(templates=templates, settings=Settings(personality=str(copy)))
    box = dialog.personality.template
    assert box.currentData() == other
    box.setCurrentIndex(box.findData("default"))
    dialog.personality.use_template()
    box.setCurrentIndex(box.findData(other))
    dialog.personality.use_template()
    assert not copy.exists()  # nothing is written before Save
    dialog.reject()
    assert not copy.exists()


def test_the_key_recorder_records_a_key_with_its_modifiers_and_refuses_a_typing_key(dialog_for, qtbot):
    dialog = dialog_for()
    dialog.show()
    recorder: KeyRecorder = dialog.voice.push_to_talk
    assert recorder.key_text() == "F9"
    qtbot.mouseClick(recorder, Qt.MouseButton.LeftButton)
    assert recorder.recording
    qtbot.keyClick(recorder, Qt.Key.Key_Space)
    assert recorder.recording and "types text" in dialog.voice.key_problem.text()
    qtbot.keyClick(recorder, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    assert not recorder.recording and recorder.key_text() == "Ctrl+Space"
    assert dialog.voice.push_to_talk_key() == "Ctrl+Space"


def test_a_push_to_talk_key_with_a_modifier_leaves_plain_keys_to_the_text_box(qtbot, qapp):
    window = CompanionWindow(push_to_talk_key="Ctrl+Space")
    qtbot.addWidget(window)
    window.install_push_to_talk(qapp)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    presses: list[bool] = []
    window.push_to_talk.connect(presses.append)
    qtbot.keyClicks(window.text_box, "a b")
    assert window.text_box.text() == "a b" and presses == []
    qtbot.keyPress(window.text_box, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyRelease(window.text_box, Qt.Key.Key_Space)
    assert presses == [True, False] and window.text_box.text() == "a b"
    assert PushToTalkKey.parse("Ctrl+Space").text() == "Ctrl+Space"
