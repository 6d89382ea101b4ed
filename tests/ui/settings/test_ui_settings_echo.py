"""Settings → Voice → Open speakers: the switches are saved with the rest, and "Test my
speakers" runs her real speaker check in the open-speaker room and shows its sentence."""

from __future__ import annotations

import asyncio
import tomllib

import pytest
from open_speaker_talk import OpenSpeakerTalk
from PySide6.QtCore import Qt
from ui_loop import (
    qt_gc_fixture,  # noqa: F401 (the qt_gc fixture)
    qt_loop_fixture,  # noqa: F401 (the qt_loop fixture)
)

from companion.config import Paths, Settings
from companion.tools.registry import Registry
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.echo import NOT_RUNNING
from companion.ui.settings.keeper import SettingsKeeper


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def dialog_for(qtbot, tmp_path, **kwargs) -> SettingsDialog:
    dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path / "config"), Settings()), Registry(), **kwargs)
    qtbot.addWidget(dialog)
    return dialog


def test_the_echo_cancellation_and_noise_switches_are_saved_with_the_rest(qtbot, tmp_path):
    dialog = dialog_for(qtbot, tmp_path)
    assert dialog.echo.echo_cancellation.isChecked() and not dialog.echo.noise_suppression.isChecked()
    dialog.echo.echo_cancellation.setChecked(False)
    dialog.echo.noise_suppression.setChecked(True)
    dialog.accept()
    saved = tomllib.loads((tmp_path / "config" / "settings.toml").read_text(encoding="utf-8"))
    assert saved["voice"]["echo_cancellation"] is False and saved["voice"]["noise_suppression"] is True
    assert dialog.keeper.settings.voice.echo_cancellation is False


def test_without_her_voice_the_speaker_test_says_there_is_nothing_to_test(qtbot, tmp_path):
    dialog = dialog_for(qtbot, tmp_path)
    assert not dialog.echo.test_button.isEnabled()
    assert dialog.echo.result.text() == NOT_RUNNING


def test_test_my_speakers_plays_her_line_and_says_how_much_came_back(
        qtbot, tmp_path, pulse_audio, scripted_brain, piper_voice, hearing, qt_loop):
    async def scenario() -> str:
        async with OpenSpeakerTalk(tmp_path, pulse_audio, scripted_brain.url, piper_voice, hearing) as talk:

            async def test_speakers() -> str:
                return (await talk.session.check_speakers()).sentence()

            dialog = dialog_for(qtbot, tmp_path, test_speakers=test_speakers)
            dialog.show()
            assert dialog.echo.test_button.isEnabled()
            qtbot.mouseClick(dialog.echo.test_button, Qt.MouseButton.LeftButton)
            await asyncio.sleep(0)  # the click's task starts
            assert not dialog.echo.test_button.isEnabled()  # one test at a time
            sentence = await dialog.echo.running
            assert dialog.echo.result.text() == sentence and dialog.echo.test_button.isEnabled()
            return sentence

    sentence = qt_loop(scenario(), timeout=90)
    assert "My voice comes back into your microphone" in sentence and "removed" in sentence
    assert "dB" in sentence
