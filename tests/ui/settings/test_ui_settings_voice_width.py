"""Settings → Voice fits its dialog: its longest entries ("Her personality's (installed: …)"
in the voice box, a long device name, a long sound-path sentence) no longer widen the form
past the dialog's edge, where the boxes were cut off with no way to scroll to them."""

from __future__ import annotations

from PySide6.QtWidgets import QScrollArea

import companion.voice.sound.backend as backend
from companion.config import Settings
from companion.ui.settings.tabs import VoiceTab

LONG = ("Sound goes through PortAudio (through ALSA): no sound server: Connection refused. "
        "Echo cancellation still works on this path.")


class NoServer:
    def sentence(self) -> str:
        return LONG


def test_every_box_of_the_voice_tab_stays_inside_it_whatever_its_entries_say(qtbot, monkeypatch):
    monkeypatch.setattr(backend, "choose", lambda _setting: NoServer())
    long_device = {"name": "Built-in Audio Analog Stereo + USB Conference Speakerphone (2nd)",
                   "max_input_channels": 1, "max_output_channels": 2}
    tab = VoiceTab(Settings(), [long_device])
    qtbot.addWidget(tab)
    tab.resize(600, 460)
    tab.show()
    qtbot.waitExposed(tab)
    scroll = tab.findChild(QScrollArea)
    qtbot.waitUntil(lambda: scroll.widget().width() > 0)

    assert tab.sound_path.text() == LONG
    assert scroll.widget().width() <= scroll.viewport().width()
    right = tab.output.mapTo(scroll.viewport(), tab.output.rect().topRight()).x()
    assert right <= scroll.viewport().width()
