"""The Settings dialog's tabs that edit the draft copy: Brain, Voice, Personality.

Each tab is built from the settings in use and reads its widgets back with `values()`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QKeySequenceEdit,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from companion.api_keys import keyring_name, load_api_key
from companion.config import BrainSettings, Paths, Settings, VoiceSettings

DEFAULT_DEVICE = "System default"


async def check_connection(brain: BrainSettings) -> tuple[bool, str, list[str]]:
    """Ask the brain for its models: (ok, a sentence for the user, the model names)."""
    from companion.brain.client import BrainError, OpenAIChatModel

    client = OpenAIChatModel(brain)
    try:
        models = await client.list_models()
    except BrainError as exc:
        return False, exc.sentence, []
    finally:
        await client.close()
    if brain.model in models or not models:
        return True, f"Connected to {brain.base_url}: the model {brain.model} is ready.", models
    listed = ", ".join(models[:6]) + ("…" if len(models) > 6 else "")
    return False, (f"Connected to {brain.base_url}, but it has no model called {brain.model}. "
                   f"It has: {listed}."), models


class BrainTab(QWidget):
    def __init__(self, brain: BrainSettings) -> None:
        super().__init__()
        self._brain = brain
        form = QFormLayout(self)
        self.url = QLineEdit(brain.base_url)
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.addItem(brain.model)
        self.key = QLineEdit(brain.api_key or load_api_key(brain.base_url))
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("not needed for a local Ollama")
        store = keyring_name()
        self.key_note = QLabel(
            f"The key is kept in your system keyring ({store})." if store else
            "No system keyring was found, so the key is saved in settings.toml "
            "(readable only by your user account).")
        self.key_note.setWordWrap(True)
        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(lambda: asyncio.ensure_future(self.test()))
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Brain URL", self.url)
        form.addRow("Model", self.model)
        form.addRow("API key", self.key)
        form.addRow("", self.key_note)
        form.addRow(self.test_button, self.result)

    def values(self) -> BrainSettings:
        """The edited brain settings (raises ValueError for a bad URL), key included."""
        from dataclasses import replace

        return replace(self._brain, base_url=self.url.text().strip(),
                       model=self.model.currentText().strip(), api_key=self.key.text().strip())

    async def test(self) -> bool:
        self.test_button.setEnabled(False)
        self.result.setText("Testing…")
        try:
            ok, sentence, models = await check_connection(self.values())
        except ValueError as exc:
            ok, sentence, models = False, str(exc), []
        finally:
            self.test_button.setEnabled(True)
        self.result.setText(("✓ " if ok else "✗ ") + sentence)
        self.result.setProperty("ok", ok)
        current = self.model.currentText()
        for name in models:
            if self.model.findText(name) < 0:
                self.model.addItem(name)
        self.model.setCurrentText(current)
        return ok


class VoiceTab(QWidget):
    def __init__(self, settings: Settings, devices: list[dict] | None, servers: list[str] | None = None) -> None:
        super().__init__()
        voice = settings.voice
        self._voice = voice
        form = QFormLayout(self)
        self.input = self._device_box(devices, "max_input_channels", voice.input_device)
        self.output = self._device_box(devices, "max_output_channels", voice.output_device)
        self.hearing = QLineEdit(voice.hearing_model)
        self.hearing.setPlaceholderText("the installed Whisper tiny.en pack")
        self.voice_name = QLineEdit(voice.voice)
        self.voice_name.setPlaceholderText("the installed piper voice (en_US-joe-medium)")
        self.speed = QDoubleSpinBox()
        self.speed.setRange(0.5, 2.0)
        self.speed.setSingleStep(0.05)
        self.speed.setValue(voice.speed)
        self.barge_in = QCheckBox("Stop talking when I talk over her")
        self.barge_in.setChecked(voice.barge_in)
        self.silence = QSpinBox()
        self.silence.setRange(100, 3000)
        self.silence.setSingleStep(50)
        self.silence.setSuffix(" ms")
        self.silence.setValue(voice.end_of_turn_silence_ms)
        self.push_to_talk = QKeySequenceEdit(QKeySequence(settings.ui.push_to_talk_key))
        self.push_to_talk.setMaximumSequenceLength(1)
        # Hearing and speaking on this computer ("local") or on Wyoming servers elsewhere.
        self.hearing_server = QLineEdit(voice.hearing)
        self.hearing_server.setPlaceholderText("local, or a Wyoming server: tcp://host:10300")
        self.voice_server = QLineEdit(voice.speaking)
        self.voice_server.setPlaceholderText("local, or a Wyoming server: tcp://host:10200")
        form.addRow("Microphone", self.input)
        form.addRow("Speaker", self.output)
        form.addRow("Hearing model", self.hearing)
        form.addRow("Voice", self.voice_name)
        form.addRow("Speed", self.speed)
        form.addRow("Barge-in", self.barge_in)
        form.addRow("End-of-turn silence", self.silence)
        form.addRow("Push-to-talk key", self.push_to_talk)
        form.addRow("Hearing", self.hearing_server)
        form.addRow("Speaking", self.voice_server)
        self.server_lines: list[QLabel] = []
        """What her Wyoming servers said about themselves when her voice started."""
        for line in servers or []:
            label = QLabel(line)
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setWordWrap(True)
            self.server_lines.append(label)
            form.addRow("", label)
        if devices == []:
            form.addRow("", QLabel("No sound devices were found: she will work by typing."))

    @staticmethod
    def _device_box(devices: list[dict] | None, channels: str, current: str) -> QComboBox:
        box = QComboBox()
        box.setEditable(True)
        box.addItem(DEFAULT_DEVICE, "")
        for device in devices or []:
            if device.get(channels, 0) > 0:
                box.addItem(str(device["name"]), str(device["name"]))
        if current:
            index = box.findData(current)
            if index < 0:
                box.addItem(current, current)
                index = box.count() - 1
            box.setCurrentIndex(index)
        return box

    @staticmethod
    def _device_value(box: QComboBox) -> str:
        text = box.currentText().strip()
        return "" if text == DEFAULT_DEVICE else text

    def values(self) -> VoiceSettings:
        from dataclasses import replace

        return replace(
            self._voice, input_device=self._device_value(self.input),
            output_device=self._device_value(self.output), hearing_model=self.hearing.text().strip(),
            voice=self.voice_name.text().strip(), speed=round(self.speed.value(), 2),
            barge_in=self.barge_in.isChecked(), end_of_turn_silence_ms=self.silence.value(),
            hearing=self.hearing_server.text().strip() or "local",
            speaking=self.voice_server.text().strip() or "local",
        )

    def push_to_talk_key(self) -> str:
        text = self.push_to_talk.keySequence().toString()
        return text or "F9"


class PersonalityTab(QWidget):
    """Which personality file she uses: her own copy, or a copy of a shipped template."""

    def __init__(self, settings: Settings, paths: Paths, templates: dict[str, Path],
                 on_edit: Callable[[], None] | None) -> None:
        super().__init__()
        self._paths = paths
        self._templates = templates
        self._chosen = settings.personality
        form = QFormLayout(self)
        self.file_label = QLabel(self._file_text())
        self.file_label.setWordWrap(True)
        self.file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.template = QComboBox()
        for name in templates:
            self.template.addItem(name)
        use = QPushButton("Use this template")
        use.clicked.connect(self.use_template)
        row = QHBoxLayout()
        row.addWidget(self.template, 1)
        row.addWidget(use)
        edit = QPushButton("Edit…")
        edit.setEnabled(on_edit is not None)
        if on_edit is not None:
            edit.clicked.connect(on_edit)
        form.addRow("Current file", self.file_label)
        form.addRow("Switch to", row)
        form.addRow("", edit)

    def current_path(self) -> Path:
        return Path(self._chosen) if self._chosen else self._paths.personality_file

    def _file_text(self) -> str:
        return str(self.current_path())

    def use_template(self) -> None:
        """Point at the user's own copy of the chosen template (made now if missing).

        "default" means her usual personality.md; other templates get their own file, so
        switching never overwrites edits the user made to another personality.
        """
        name = self.template.currentText()
        if name == "default":
            self._chosen = ""
        else:
            from companion.paths import atomic_write_text

            copy = self._paths.config_dir / f"personality-{name}.md"
            if not copy.exists():
                atomic_write_text(copy, self._templates[name].read_text(encoding="utf-8"))
            self._chosen = str(copy)
        self.file_label.setText(self._file_text())

    def value(self) -> str:
        return self._chosen
