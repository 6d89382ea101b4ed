"""Settings → Voice offers hibari's heart beside piper's Joe, a Pitch beside Speed, and "Preview
voice", which says a line in the draft voice, speed and pitch before Save (issue 54)."""

from __future__ import annotations

from companion.config import Paths, Settings, VoiceSettings
from companion.tools.registry import Registry
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.settings.tabs import HIBARI_VOICE


def test_her_voice_and_pitch_are_chosen_in_the_voice_tab_and_kept_on_save(qtbot, tmp_path):
    keeper = SettingsKeeper(Paths.default(tmp_path), Settings())
    dialog = SettingsDialog(keeper, Registry())
    qtbot.addWidget(dialog)
    tab = dialog.voice
    assert tab.values() == Settings().voice  # untouched: nothing changes
    tab.voice_name.setCurrentText(HIBARI_VOICE)
    tab.pitch.setValue(-2.5)
    assert (tab.values().voice, tab.values().pitch) == ("hibari/heart", -2.5)


async def test_preview_voice_says_a_line_in_the_draft_voice_before_save(qtbot, tmp_path):
    asked: list[VoiceSettings] = []

    async def preview(voice: VoiceSettings) -> str:
        asked.append(voice)
        return "That was hibari/heart at speed 1, pitch +3 semitones."

    keeper = SettingsKeeper(Paths.default(tmp_path), Settings())
    dialog = SettingsDialog(keeper, Registry(), preview_voice=preview)
    qtbot.addWidget(dialog)
    dialog.voice.voice_name.setCurrentText(HIBARI_VOICE)
    dialog.voice.pitch.setValue(3.0)
    said = await dialog.voice_preview.preview()
    assert [(voice.voice, voice.pitch) for voice in asked] == [("hibari/heart", 3.0)]
    assert dialog.voice_preview.result.text() == said
    assert keeper.settings.voice.voice == ""  # nothing saved by a preview
    idle = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), Settings()), Registry())
    qtbot.addWidget(idle)
    assert not idle.voice_preview.button.isEnabled()  # her voice isn't running: nothing to preview with


async def test_her_running_voice_plays_the_preview_in_the_voice_asked_for(tmp_path):
    from types import SimpleNamespace

    from voice_pitch import median_pitch_hz

    from companion.events import EventBus
    from companion.ui.app_voice import WindowVoice
    from companion.voice.sound.audio import WavSink

    core = SimpleNamespace(voice_settings=lambda voice: voice)  # a personality that names nothing
    window_voice = WindowVoice(core, EventBus(), VoiceSettings(), tmp_path)
    sink = WavSink(lambda: 0.0, rate=22_050)
    window_voice.session = SimpleNamespace(sink=sink)
    said = await window_voice.preview_voice(VoiceSettings(voice="hibari/heart", speed=1.1))
    assert said == "That was hibari/heart at speed 1.1, pitch +0 semitones."
    assert median_pitch_hz(sink.audio(), sink.rate) > 160  # her woman's voice, not Joe's
