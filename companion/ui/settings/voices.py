"""Settings → Voice → Knowing voices: the user's yes or no, the voiceprints kept (by name, with
when each was made), forgetting one, and "Learn my voice…" (a person reads a few sentences aloud)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
)

from companion.config import VoiceSettings
from companion.voice.voiceprint.enrolment import Enrolment
from companion.voice.voiceprint.store import VoiceprintStore

__all__ = ["VOICES_SECTION", "VoicesRows"]

VOICES_SECTION = "Knowing voices"
ASK = ("She can learn your voice from the times you call her, or from a few sentences you read aloud, "
       "so that the follow-up window, a spoken answer to a card and stopping her belong to you, not to "
       "a guest or the TV. Several people can be known by name. Only numbers describing each voice are "
       "kept, in her data folder; no audio, and nothing leaves this computer.")
HOW = {"reading": "read aloud", "calls": "learned from calls"}


def who(name: str) -> str:
    return "Your voice" if name == "you" else name


class VoicesRows:
    """`values(voice)` puts the choice into `voice`; Forget deletes a print at once (as deleting a
    file would), and so does a reading keep one: neither waits for Save."""

    def __init__(self, voice: VoiceSettings, folder: Path | None) -> None:
        self._voice = voice
        self._asked = voice.know_voices != "ask"
        self.know = QCheckBox("Know voices (learned from calls and readings)")
        self.know.setChecked(voice.know_voices == "yes")
        self.know.toggled.connect(self._touched)
        self.explain = QLabel(ASK)
        self.explain.setWordWrap(True)
        self.prints = QListWidget()
        self.prints.setMaximumHeight(110)
        self.prints.setAccessibleName("Voices she knows")
        self.state = QLabel()
        self.state.setWordWrap(True)
        self.forget = QPushButton("Forget this voice")
        self.forget.clicked.connect(self._forget)
        self.learn = QPushButton("Learn my voice…")
        self.learn.clicked.connect(self.open_learning)
        self.learning = None
        """The reading dialog while it is open."""
        self.enrolling = None
        """Her running voice session's VoiceSession.enrolling (set by the app; None without a
        voice): the reading dialog mutes her ear while a person reads to it."""
        self._store = VoiceprintStore(folder) if folder is not None else None
        self.learn.setEnabled(self._store is not None)
        self._show()

    def fill(self, form: QFormLayout) -> None:
        form.addRow("", self.know)
        form.addRow("", self.explain)
        form.addRow("Known", self.prints)
        form.addRow("", self.state)
        buttons = QHBoxLayout()
        buttons.addWidget(self.learn)
        buttons.addWidget(self.forget)
        buttons.addStretch(1)
        form.addRow("", buttons)

    def _touched(self, _checked: bool) -> None:
        self._asked = True

    def _show(self) -> None:
        store = self._store
        self.prints.clear()
        for voiceprint in (store.current()[n] for n in store.names()) if store is not None else ():
            name, made, seconds, count = next(row for row in store.listing() if row[0] == voiceprint.name)
            item = QListWidgetItem(f"{who(name)}: made {made}, {HOW.get(voiceprint.source, voiceprint.source)}, "
                                   f"{seconds:.0f} s of speech from {count} utterances")
            item.setData(256, name)  # Qt.UserRole
            self.prints.addItem(item)
        if self.prints.count():
            self.prints.setCurrentRow(0)
            self.state.setText(Enrolment(store, 0.0).state().sentence())
        else:
            self.state.setText("No voiceprint: she knows no voice.")
        self.forget.setEnabled(bool(self.prints.count()))

    def _forget(self) -> None:
        item = self.prints.currentItem()
        if self._store is not None and item is not None:
            self._store.delete(item.data(256))
        self._show()

    def open_learning(self) -> None:
        """The reading dialog, on the microphone chosen in these settings."""
        if self._store is None:
            return
        from companion.ui.settings.learn_voice import LearnVoiceDialog
        from companion.voice.voiceprint.reading import open_microphone

        voice = self._voice
        self.learning = LearnVoiceDialog(self._store, lambda: open_microphone(voice.input_device, voice.sound_backend),
                                         name="" if self._store.names() else "you", enrolling=self.enrolling,
                                         parent=self.prints.window())
        self.learning.learned.connect(self._learned)
        self.learning.open()

    def _learned(self, _name: str) -> None:
        # Reading aloud is asking her to know voices: the tick follows (Save keeps it).
        self.know.setChecked(True)
        self._show()

    def values(self, voice: VoiceSettings) -> VoiceSettings:
        if not self._asked:
            return replace(voice, know_voices="ask")  # not answered here: still to be asked
        return replace(voice, know_voices="yes" if self.know.isChecked() else "no")
