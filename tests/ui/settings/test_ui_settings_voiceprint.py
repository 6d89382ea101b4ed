"""Settings → Voice → Knowing voices: the user's yes (not asked: still off), the voiceprints kept
with when they were made, Forget, and the Only me mode."""

from __future__ import annotations

import numpy as np
import pytest
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.config import Paths, Settings
from companion.tools.registry import Registry
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper
from companion.voice.voiceprint import VoiceprintStore


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _dialog(qtbot, tmp_path, settings: Settings | None = None) -> SettingsDialog:
    dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), settings or Settings()), Registry())
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_tab("voice")
    qtbot.waitExposed(dialog)
    return dialog


def test_knowing_voices_stays_unasked_until_the_user_answers_and_a_tick_says_yes(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path)
    untouched = dialog.voice.values().know_voices
    dialog.voice.voices.know.setChecked(True)

    assert untouched == "ask"
    assert dialog.voice.values().know_voices == "yes"


def test_the_voiceprints_kept_are_listed_with_when_they_were_made_and_forget_deletes_them(qtbot, tmp_path):
    data_dir = Paths.default(tmp_path).data_dir
    store = VoiceprintStore(data_dir)
    for _ in range(5):
        store.add("you", np.eye(256, dtype=np.float32)[0], 3.0, at=1_765_000_000)
    dialog = _dialog(qtbot, tmp_path)
    rows = dialog.voice.voices
    shown = rows.prints.item(0).text()
    state = rows.state.text()
    rows.forget.click()

    assert "Your voice: made 2025-12-" in shown and "15 s of speech from 5 utterances" in shown
    assert "I know your voice" in state
    assert VoiceprintStore(data_dir).names() == [] and not rows.forget.isEnabled()


def test_only_me_is_a_listening_mode_in_settings(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path)
    box = dialog.voice.listening.mode
    box.setCurrentIndex(box.findData("only_me"))

    assert dialog.voice.values().listening == "only_me"
    assert "ignores every other voice" in dialog.voice.listening.note.text()
