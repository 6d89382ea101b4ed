"""Settings → Voice → Listening: the mode, the wake word, her name, the follow-up window, the cue,
and a warning when her hearing does not reliably catch one of her names."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QLabel

from companion.config import VoiceSettings
from companion.events import NamesHeard
from companion.voice.addressing.learning import MAY_NOT_WAKE, heard_as, unheard_advice
from companion.voice.addressing.wake import BUNDLED_WAKE_WORDS

__all__ = ["LISTENING_SECTION", "MODES", "ListeningRows", "unheard_lines"]

LISTENING_SECTION = "Listening"

MODES = (("Always answer", "always"), ("When called", "called"), ("Only me", "only_me"), ("Muted", "muted"))
"""(label, VoiceSettings.mode): the tray's Listening mode menu, and Only me (needs Know my voice)."""

CUES = (("Nothing", "none"), ("A short chime", "chime"), ('She says "Yes?"', "yes"))


def _combo(items, current: str) -> QComboBox:
    box = QComboBox()
    for label, value in items:
        box.addItem(label, value)
    box.setCurrentIndex(max(0, box.findData(current)))
    return box


def unheard_lines(heard: NamesHeard | None, wake_word: str) -> str:
    """What Settings says of her names her hearing does not reliably catch ("" when none)."""
    names = [n for n in heard.names if not n.reliable] if heard is not None else []
    lines = [f"Her name \u201c{n.name}\u201d is {heard_as(n.caught, n.heard)}: {MAY_NOT_WAKE}." for n in names]
    return "\n".join([*lines, unheard_advice(wake_word)]) if lines else ""


class ListeningRows:
    """The Listening section's widgets; `values(voice)` puts what they show into `voice`.
    `show_heard(event)` takes how her hearing writes her names (information, not a setting)."""

    def __init__(self, voice: VoiceSettings, her_name: str = "") -> None:
        self.mode = _combo(MODES, voice.mode)
        self.mode.setToolTip("When called: she answers only her name, the wake word or push-to-talk, "
                             "then a follow-up; other voices in the room start nothing.")
        self.wake_word = _combo([(phrase, name) for name, phrase in BUNDLED_WAKE_WORDS.items()], voice.wake_word)
        self.name_wakes = QCheckBox()
        self.set_her_name(her_name)
        self.name_wakes.setChecked(voice.name_wakes)
        self.unheard = QLabel()
        self.unheard.setObjectName("problem")
        self.unheard.setWordWrap(True)
        self._heard: NamesHeard | None = None
        self._form: QFormLayout | None = None
        self.follow_up = QDoubleSpinBox()
        self.follow_up.setRange(0.0, 60.0)
        self.follow_up.setSingleStep(1.0)
        self.follow_up.setDecimals(0)
        self.follow_up.setSuffix(" s")
        self.follow_up.setValue(voice.follow_up_s)
        self.follow_up.setToolTip("After she answers, what you say within this time needs no wake word, "
                                  "unless it is clearly meant for someone else.")
        self.cue = _combo(CUES, voice.called_cue)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.mode.currentIndexChanged.connect(self._explain)
        self.name_wakes.toggled.connect(self._explain)
        self.wake_word.currentIndexChanged.connect(self._explain)
        self._explain()

    def show_heard(self, heard: NamesHeard | None) -> None:
        """The latest learning of her names: a line for each she may not wake to, in When called."""
        self._heard = heard
        self._explain()

    def set_her_name(self, her_name: str) -> None:
        said = f"said first: \u201c{her_name}, \u2026\u201d" if her_name else "said first in a sentence"
        self.name_wakes.setText(f"Her name wakes her ({said})")

    def fill(self, form: QFormLayout) -> None:
        form.addRow("Listening mode", self.mode)
        form.addRow("Wake word", self.wake_word)
        form.addRow("", self.name_wakes)
        form.addRow("", self.unheard)
        form.addRow("Follow-up window", self.follow_up)
        form.addRow("When called", self.cue)
        form.addRow("", self.note)
        self._form = form
        self._explain()

    def _explain(self) -> None:
        mode = self.mode.currentData()
        called = mode in ("called", "only_me")
        for widget in (self.wake_word, self.name_wakes, self.follow_up, self.cue):
            widget.setEnabled(called)
        if mode == "always":
            text = "She answers every voice she hears: best with a headset in a quiet room."
        elif mode == "muted":
            text = "Her microphone is off; push-to-talk still works."
        elif mode == "only_me":
            text = ("She answers your voice with no call and ignores every other voice (tick Know my voice "
                    "below). Until she is sure of your voice she answers as in When called.")
        elif self.name_wakes.isChecked():
            text = ("While waiting, the wake-word detector and her hearing (for her name) run on every voice; "
                    "nothing reaches her brain, history or transcript until she is called.")
        else:
            text = ("While waiting, only the wake-word detector runs; nothing reaches her brain, history "
                    "or transcript until she is called.")
        self.note.setText(text)
        unheard = unheard_lines(self._heard, self.wake_word.currentData()) if (
            called and self.name_wakes.isChecked()) else ""
        self.unheard.setText(unheard)
        if self._form is not None:  # no row without a line (and no window of its own before it has a row)
            self._form.setRowVisible(self.unheard, bool(unheard))

    def values(self, voice: VoiceSettings) -> VoiceSettings:
        return replace(voice.with_mode(self.mode.currentData()), wake_word=self.wake_word.currentData(),
                       name_wakes=self.name_wakes.isChecked(), follow_up_s=float(self.follow_up.value()),
                       called_cue=self.cue.currentData())
