"""Settings → Voice → Open speakers: the echo cancellation and noise switches, and "Test my
speakers" (she plays a short line and says how much of it came back into the microphone)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QLabel, QPushButton

from companion.config import VoiceSettings
from companion.ui.settings.tabs import VoiceTab

SpeakerTest = Callable[[], Awaitable[str]]
NOT_RUNNING = "Her voice is not running, so there is nothing to test yet."


class EchoControls:
    """Adds its rows to a VoiceTab; `values(voice)` puts the switches into edited settings."""

    SECTION = "Open speakers"

    def __init__(self, tab: VoiceTab, voice: VoiceSettings, test_speakers: SpeakerTest | None) -> None:
        self.echo_cancellation = QCheckBox("Remove her voice from my microphone (off for a headset)")
        self.echo_cancellation.setChecked(voice.echo_cancellation)
        self.noise_suppression = QCheckBox("Suppress steady background noise (fans, hum)")
        self.noise_suppression.setChecked(voice.noise_suppression)
        self._test_speakers = test_speakers
        self.test_button = QPushButton("Test my speakers")
        self.test_button.setEnabled(test_speakers is not None)
        self.test_button.clicked.connect(self._start_test)
        self.running: asyncio.Future | None = None
        """The speaker test in progress (or the last one)."""
        self.result = QLabel("" if test_speakers is not None else NOT_RUNNING)
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        tab.add_row(self.SECTION, "Echo cancellation", self.echo_cancellation)
        tab.add_row(self.SECTION, "Noise", self.noise_suppression)
        tab.add_row(self.SECTION, "", self.test_button)
        tab.add_row(self.SECTION, "", self.result)

    def _start_test(self) -> None:
        self.running = asyncio.ensure_future(self.test())

    def values(self, voice: VoiceSettings) -> VoiceSettings:
        return replace(voice, echo_cancellation=self.echo_cancellation.isChecked(),
                       noise_suppression=self.noise_suppression.isChecked())

    async def test(self) -> str:
        """Run the speaker test with the settings in use (not this draft) and show its sentence."""
        if self._test_speakers is None:
            return NOT_RUNNING
        self.test_button.setEnabled(False)
        self.result.setText("Listening to myself…")
        try:
            sentence = await self._test_speakers()
        except Exception as exc:  # a device vanished mid-test: say so, keep the dialog usable
            sentence = f"The speaker test didn't work: {exc}"
        finally:
            self.test_button.setEnabled(True)
        self.result.setText(sentence)
        return sentence
