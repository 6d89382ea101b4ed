"""The Settings dialog's tabs that edit the draft copy: Brain and Voice (Personality is in
personality_tab.py).

Each tab is built from the settings in use and reads its widgets back with `values()`;
none of them changes anything before Save. The Voice tab is a list of sections
(`add_section`, `add_row`) so other parts of her voice can add their own rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, SignalInstance, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from companion.api_keys import keyring_name, load_api_key
from companion.config import BrainSettings, Settings, VoiceSettings
from companion.ui.key_recorder import DEFAULT_KEY, KeyRecorder
from companion.ui.settings.listening import LISTENING_SECTION, ListeningRows
from companion.ui.settings.shortcuts import SECTION as SHORTCUTS_SECTION
from companion.ui.settings.shortcuts import ShortcutRows
from companion.ui.settings.voices import VOICES_SECTION, VoicesRows

DEFAULT_DEVICE = "System default"
INSTALLED_HEARING = "Whisper tiny.en (installed)"
MOONSHINE_HEARING = "Moonshine base-en (installed)"
INSTALLED_VOICE = "Her personality's (installed: en_US-joe-medium unless it names another)"
HIBARI_VOICE = "hibari/heart: a woman's voice (installed)"


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
    def __init__(self, brain: BrainSettings, *, one_run: bool = False) -> None:
        """`one_run`: this run's URL or model came from the command line."""
        super().__init__()
        self._brain = brain
        form = QFormLayout(self)
        if one_run:
            note = QLabel("This run uses the brain given on the command line. Save keeps the one in "
                          "your settings file unless you change these fields.")
            note.setObjectName("hint")
            note.setWordWrap(True)
            form.addRow(note)
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
    """Devices, hearing and voice, timing, push-to-talk. Extend it with `add_section`/`add_row`."""

    def __init__(self, settings: Settings, devices: list[dict] | None, *, hearing_models: list[str] = (),
                 voices: list[str] = (), mic_level: SignalInstance | None = None,
                 servers: list[str] | None = None, her_name: str = "", her_speed: float | None = None,
                 data_dir: Path | None = None) -> None:
        """`servers`: what her Wyoming servers said about themselves when her voice started;
        `her_name`, `her_speed`: the current personality's name and `speed:` (None: none);
        `data_dir`: her data folder (the voiceprints kept there are listed)."""
        super().__init__()
        voice = settings.voice
        self._voice = voice
        self._sections: dict[str, QFormLayout] = {}
        # The sections scroll: stacked in the dialog they were taller than a laptop screen, and
        # squeezed to fit they clipped their labels.
        sections = QWidget()
        self._column = QVBoxLayout(sections)
        self._column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(sections)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)
        self.input = self._device_box(devices, "max_input_channels", voice.input_device)
        self.output = self._device_box(devices, "max_output_channels", voice.output_device)
        self.level = QProgressBar()
        self.level.setRange(0, 100)
        self.level.setTextVisible(False)
        self.level.setMaximumHeight(10)
        self.level.setToolTip("What her microphone hears now")
        if mic_level is not None:
            mic_level.connect(self.show_level)
        self.hearing = self._model_box(INSTALLED_HEARING, hearing_models, voice.hearing_model,
                                       also=hearing_engines())
        self.voice_name = self._model_box(INSTALLED_VOICE, voices, voice.voice, also=voice_engines())
        self.speed = QDoubleSpinBox()
        self.speed.setRange(0.5, 2.0)
        self.speed.setSingleStep(0.05)
        self.speed.setValue(voice.speed)
        self.speed_note = QLabel()
        self.speed_note.setObjectName("hint")
        self.speed_note.setWordWrap(True)
        self._her = (her_name, her_speed)
        self.speed.valueChanged.connect(self._explain_speed)
        self._explain_speed()
        self.pitch = QDoubleSpinBox()
        self.pitch.setRange(-12.0, 12.0)
        self.pitch.setSingleStep(0.5)
        self.pitch.setDecimals(1)
        self.pitch.setSuffix(" semitones")
        self.pitch.setValue(voice.pitch)
        self.pitch.setToolTip("Higher or lower than her voice's own; 0 keeps her personality's `pitch:` "
                              "(Jeeves -2, Pip +4).")
        self.barge_in = QCheckBox("Stop talking when I talk over her")
        self.barge_in.setChecked(voice.barge_in)
        self.silence = QSpinBox()
        self.silence.setRange(100, 3000)
        self.silence.setSingleStep(50)
        self.silence.setSuffix(" ms")
        self.silence.setValue(voice.end_of_turn_silence_ms)
        self.silence.setToolTip("When you sound finished she answers at once; when you pause mid-sentence "
                                "she waits up to this long (without the turn model: a fixed 500 ms).")
        self.push_to_talk = KeyRecorder(settings.ui.push_to_talk_key)
        self.key_problem = QLabel()
        self.key_problem.setObjectName("problem")
        self.key_problem.setWordWrap(True)
        self.push_to_talk.refused.connect(self.key_problem.setText)
        self.push_to_talk.changed.connect(lambda _key: self.key_problem.clear())
        devices_form = self.add_section("Devices")
        devices_form.addRow("Microphone", self.input)
        devices_form.addRow("Level", self.level if mic_level is not None else
                            QLabel("Shown while she is listening."))
        devices_form.addRow("Speaker", self.output)
        from companion.voice.sound.backend import choose  # asks the server (a few ms; 1 s at most)

        self.sound_path = QLabel(choose(voice.sound_backend).sentence())
        self.sound_path.setWordWrap(True)
        devices_form.addRow("Sound path", self.sound_path)
        if devices == []:
            devices_form.addRow("", QLabel("No sound devices were found: she will work by typing."))
        self.listening = ListeningRows(voice, her_name)
        self.listening.fill(self.add_section(LISTENING_SECTION))
        self.voices = VoicesRows(voice, data_dir)
        self.voices.fill(self.add_section(VOICES_SECTION))
        models = self.add_section("Hearing and voice")
        models.addRow("Hearing model", self.hearing)
        models.addRow("Voice", self.voice_name)
        models.addRow("Speed", self.speed)
        models.addRow("", self.speed_note)
        models.addRow("Pitch", self.pitch)
        talk = self.add_section("Talking")
        talk.addRow("Barge-in", self.barge_in)
        talk.addRow("How long may I wait while you think?", self.silence)
        self.shortcuts = ShortcutRows(settings.ui, self.push_to_talk, self.key_problem)
        self.shortcuts.fill(self.add_section(SHORTCUTS_SECTION))
        # Hearing and speaking on this computer ("local") or on Wyoming servers elsewhere.
        self.hearing_server = QLineEdit(voice.hearing)
        self.hearing_server.setPlaceholderText("local, or a Wyoming server: tcp://host:10300")
        self.voice_server = QLineEdit(voice.speaking)
        self.voice_server.setPlaceholderText("local, or a Wyoming server: tcp://host:10200")
        where = self.add_section("Where she hears and speaks")
        where.addRow("Hearing", self.hearing_server)
        where.addRow("Speaking", self.voice_server)
        self.server_lines: list[QLabel] = []
        """What her Wyoming servers said about themselves when her voice started."""
        for line in servers or []:
            label = QLabel(line)
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setWordWrap(True)
            self.server_lines.append(label)
            where.addRow("", label)

    def follow_personality(self, name: str, speed: float | None) -> None:
        """Another personality is chosen (in the Personality tab, before Save): what this tab
        says of her name and her pace follows it."""
        self._her = (name, speed)
        self.listening.set_her_name(name)
        self._explain_speed()

    def _explain_speed(self) -> None:
        # 1.00 is no choice at all: the personality's own `speed:` decides (Jeeves 0.9, Pip 1.15).
        name, speed = self._her
        whose = f"{name}'s" if name else "her personality's"
        own = speed is not None and round(speed, 2) != 1.0
        if round(self.speed.value(), 2) == 1.0:
            text = f"1.00 keeps {whose} own pace ({speed:.2f})." if own else "1.00: her voice's usual pace."
        else:
            text = f"Your pace, in place of {whose} own ({speed:.2f}); 1.00 gives it back." if own else ""
        self.speed_note.setText(text)

    def add_section(self, title: str) -> QFormLayout:
        """A titled group of rows at the end of the tab; add rows to the returned form."""
        box = QGroupBox(title)
        form = QFormLayout(box)
        self._column.insertWidget(self._column.count() - 1, box)
        self._sections[title] = form
        return form

    def add_row(self, section: str, label: str, widget: QWidget) -> None:
        """Add a row to an existing section (made if missing)."""
        form = self._sections.get(section) or self.add_section(section)
        form.addRow(label, widget)

    @Slot(float)
    def show_level(self, level: float) -> None:
        self.level.setValue(round(100 * min(1.0, max(0.0, level))))

    @staticmethod
    def _device_box(devices: list[dict] | None, channels: str, current: str) -> QComboBox:
        box = _narrow(QComboBox())
        box.setEditable(True)
        box.addItem(DEFAULT_DEVICE, "")
        for device in devices or []:
            if device.get(channels, 0) > 0:
                box.addItem(str(device["name"]), str(device["name"]))
        return _select(box, current)

    @staticmethod
    def _model_box(installed: str, downloaded: list[str], current: str,
                   also: Sequence[tuple[str, str]] = ()) -> QComboBox:
        """The installed pack, other installed engines (label, value), models already
        downloaded, and any name or path typed in."""
        box = _narrow(QComboBox())
        box.setEditable(True)  # a model name to download, or a path, can still be typed
        box.addItem(installed, "")
        for label, value in also:
            box.addItem(label, value)
        for name in downloaded:
            box.addItem(f"{name} (downloaded)", name)
        return _select(box, current)

    @staticmethod
    def _device_value(box: QComboBox) -> str:
        text = box.currentText().strip()
        return "" if text == DEFAULT_DEVICE else text

    @staticmethod
    def _model_value(box: QComboBox) -> str:
        text = box.currentText().strip()
        index = box.findText(text)
        return str(box.itemData(index)) if index >= 0 else text

    def values(self) -> VoiceSettings:
        from dataclasses import replace

        return replace(
            self.voices.values(self.listening.values(self._voice)), input_device=self._device_value(self.input),
            output_device=self._device_value(self.output), hearing_model=self._model_value(self.hearing),
            voice=self._model_value(self.voice_name), speed=round(self.speed.value(), 2),
            pitch=round(self.pitch.value(), 1),
            barge_in=self.barge_in.isChecked(), end_of_turn_silence_ms=self.silence.value(),
            hearing=self.hearing_server.text().strip() or "local",
            speaking=self.voice_server.text().strip() or "local",
        )

    def push_to_talk_key(self) -> str:
        return self.push_to_talk.key_text() or DEFAULT_KEY


def hearing_engines() -> list[tuple[str, str]]:
    """Hearing engines installed besides Whisper, as (label, voice.hearing_model value)."""
    from companion.voice.models.files import MOONSHINE, moonshine_installed

    return [(MOONSHINE_HEARING, MOONSHINE)] if moonshine_installed() else []


def voice_engines() -> list[tuple[str, str]]:
    """Voices installed besides piper's, as (label, voice.voice value): hibari's heart."""
    from companion.voice.models.files import hibari_installed

    return [(HIBARI_VOICE, "hibari/heart")] if hibari_installed() else []


def _select(box: QComboBox, current: str) -> QComboBox:
    """Select the entry whose value is `current` (added when the list lacks it)."""
    if current:
        index = box.findData(current)
        if index < 0:
            box.addItem(current, current)
            index = box.count() - 1
        box.setCurrentIndex(index)
    return box


def _narrow(box: QComboBox) -> QComboBox:
    """A box as wide as the form gives it, not as its longest entry: "Her personality's
    (installed: …)" or a long device name pushed every box of the tab past the dialog's edge."""
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    box.setMinimumContentsLength(18)
    return box
