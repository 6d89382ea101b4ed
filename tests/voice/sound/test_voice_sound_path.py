"""Which way her sound goes: straight to the sound server when one answers, PortAudio otherwise
or when the settings say so; `companion doctor` and Settings → Voice say which, and why."""

from __future__ import annotations

import os

import pytest

from companion.config import Settings, VoiceSettings, with_overrides
from companion.doctor.voice import check_sound_path
from companion.voice.factory import open_devices
from companion.voice.sound.backend import PORTAUDIO, PULSE, choose
from companion.voice.sound.devices import DeviceSink, DeviceSource
from companion.voice.sound.pulse_devices import PulseSink, PulseSource


@pytest.fixture
def no_server(monkeypatch):
    monkeypatch.setenv("PULSE_SERVER", "unix:/nonexistent/pulse/native")


def test_with_a_sound_server_running_her_sound_goes_straight_to_it(pulse_audio):
    chosen = choose()
    assert chosen.name == PULSE and "server (protocol" in chosen.why and "answers" in chosen.why
    assert chosen.sentence().startswith("Sound goes through the sound server (PulseAudio/PipeWire) directly")


def test_with_no_sound_server_she_falls_back_to_portaudio_and_says_why(no_server):
    chosen = choose()
    assert chosen.name == PORTAUDIO and "no sound server" in chosen.why
    check = check_sound_path(Settings())
    assert check.ok and check.detail.startswith("PortAudio (through ALSA): no sound server")


def test_the_setting_forces_a_path_and_the_doctor_warns_when_the_forced_server_is_missing(pulse_audio):
    assert choose(PORTAUDIO) == choose(PORTAUDIO) and choose(PORTAUDIO).why == "chosen in the settings"
    assert choose(PULSE).name == PULSE
    with pytest.raises(ValueError, match="sound_backend"):
        VoiceSettings(sound_backend="jack")
    os.environ["PULSE_SERVER"], saved = "unix:/nonexistent/pulse/native", os.environ["PULSE_SERVER"]
    try:
        check = check_sound_path(with_overrides(Settings(), voice={"sound_backend": PULSE}))
    finally:
        os.environ["PULSE_SERVER"] = saved
    assert not check.ok and not check.essential and "pactl info" in check.fix


@pytest.mark.parametrize("saved", ["default", "pulse"])
async def test_a_device_saved_by_its_alsa_name_opens_the_servers_default_on_the_direct_path(pulse_audio, saved):
    """Settings saved while her sound went through PortAudio name ALSA's "default" or "pulse":
    on the sound server those name no device, and her microphone must not go missing."""
    voice = VoiceSettings(sound_backend="auto", input_device=saved, output_device=saved)
    source, sink, notices, echo = await open_devices(voice, sample_rate=22_050)
    try:
        assert notices == [] and isinstance(source, PulseSource) and isinstance(sink, PulseSink)
        assert source._stream is not None and sink._stream is not None
    finally:
        source.close()
        await sink.close()
        echo.close()


@pytest.mark.parametrize(("setting", "kinds"), [("auto", (PulseSource, PulseSink)),
                                                 ("portaudio", (DeviceSource, DeviceSink))])
async def test_her_devices_open_on_the_path_chosen(pulse_audio, setting, kinds):
    source, sink, notices, echo = await open_devices(VoiceSettings(sound_backend=setting), sample_rate=22_050)
    try:
        assert notices == [] and (type(source), type(sink)) == kinds
        assert source.backend == sink.backend == (PULSE if setting == "auto" else PORTAUDIO)
    finally:
        source.close()
        await sink.close()
        echo.close()


def test_settings_voice_shows_the_sound_path(qtbot, pulse_audio):
    from companion.ui.settings.tabs import VoiceTab

    tab = VoiceTab(Settings(), [])
    qtbot.addWidget(tab)
    assert tab.sound_path.text().startswith("Sound goes through the sound server (PulseAudio/PipeWire) directly")
