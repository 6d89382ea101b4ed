"""Learn my voice…: a person reads a few sentences aloud and she keeps their voiceprint by name.

The dialog shows the sentence to read, a live level meter, how many are done, and "Done" once
the print is kept. The reading itself (the microphone, the VAD, the encoder, the store) is the
core's voiceprint.reading; this only shows its progress. It runs on the window's asyncio loop
(qasync), so progress arrives on the Qt thread.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from companion.errors import CompanionError
from companion.voice.sound.audio import AudioSource
from companion.voice.voiceprint.encoder import SpeakerEncoder
from companion.voice.voiceprint.reading import Reading, ReadingProgress
from companion.voice.voiceprint.store import VoiceprintStore

__all__ = ["LearnVoiceDialog", "level_percent"]

log = logging.getLogger(__name__)

FLOOR_DB = -60.0
INTRO = ("Read each sentence aloud in your usual voice, where you usually talk to her. About half a "
         "minute in all. Only numbers describing your voice are kept, in her data folder; no audio, "
         "and nothing leaves this computer.")


def level_percent(rms: float) -> int:
    """A frame's level on the meter: -60 dBFS (a quiet room) to 0 dBFS, as 0-100."""
    if rms <= 0:
        return 0
    return max(0, min(100, round(100 * (20 * math.log10(rms) - FLOOR_DB) / -FLOOR_DB)))


class LearnVoiceDialog(QDialog):
    """`open_source()` opens the microphone (raises CompanionError when it can't); the print goes
    to `store` under the name typed. `learned(name)` once it is kept. `enrolling(True)` is called
    when a reading starts and `enrolling(False)` when it ends (VoiceSession.enrolling: her ear
    is muted meanwhile, so the sentences read are no turns for her)."""

    learned = Signal(str)

    def __init__(self, store: VoiceprintStore, open_source: Callable[[], AudioSource], *,
                 encoder: SpeakerEncoder | None = None, name: str = "",
                 enrolling: Callable[[bool], None] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Learn my voice")
        self.setMinimumWidth(460)
        self._store, self._open_source = store, open_source
        self._enrolling = enrolling
        self._encoder = encoder or SpeakerEncoder()
        self._reading: Reading | None = None
        self._source: AudioSource | None = None
        self._task: asyncio.Future | None = None
        self.intro = QLabel(INTRO)
        self.intro.setWordWrap(True)
        self.name = QLineEdit(name)
        self.name.setPlaceholderText("Your name (each person enrolled has one)")
        self.name.textChanged.connect(lambda text: self.start.setEnabled(bool(text.strip()) and self._task is None))
        self.sentence = QLabel("")
        self.sentence.setWordWrap(True)
        self.sentence.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.sentence.setStyleSheet("font-size: 16pt; padding: 12px;")
        self.sentence.setMinimumHeight(90)
        self.level = QProgressBar()
        self.level.setRange(0, 100)
        self.level.setTextVisible(False)
        self.level.setAccessibleName("Microphone level")
        self.progress = QProgressBar()
        self.progress.setFormat("%v of %m sentences")
        self.progress.setRange(0, 5)
        self.progress.setValue(0)
        self.note = QLabel("")
        self.note.setWordWrap(True)
        self.start = QPushButton("Start")
        self.start.setEnabled(bool(name.strip()))
        self.start.clicked.connect(self.begin)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.done_button = self.buttons.addButton("Done", QDialogButtonBox.ButtonRole.AcceptRole)
        self.done_button.setEnabled(False)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("Whose voice", self.name)
        form.addRow("Level", self.level)
        form.addRow("Progress", self.progress)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addLayout(form)
        layout.addWidget(self.sentence)
        layout.addWidget(self.note)
        layout.addWidget(self.start)
        layout.addWidget(self.buttons)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def begin(self) -> None:
        """Open the microphone and start listening for the first sentence."""
        if self.running or not self.name.text().strip():
            return
        try:
            self._source = self._open_source()
        except CompanionError as exc:
            self.note.setText(exc.sentence)
            return
        self.name.setEnabled(False)
        self.start.setEnabled(False)
        self.note.setText("Listening…")
        self._reading = Reading(self._store, self._encoder, self.name.text(), on_progress=self._show)
        if self._enrolling is not None:
            self._enrolling(True)  # before the first frame: not one word read is hers to answer
        self._task = asyncio.ensure_future(self._read(self._reading, self._source))

    async def _read(self, reading: Reading, source: AudioSource) -> None:
        try:
            kept = await reading.run(source)
        except CompanionError as exc:
            self.note.setText(exc.sentence)
            kept = False
        except Exception:
            log.exception("voice: reading aloud failed")
            self.note.setText("Something went wrong while listening: nothing was kept.")
            kept = False
        finally:
            source.close()
            if self._enrolling is not None:
                self._enrolling(False)
        self.start.setText("Read again")
        self.start.setEnabled(True)
        self.name.setEnabled(True)
        self.done_button.setEnabled(kept)
        if kept:
            self.learned.emit(reading.name)

    def _show(self, progress: ReadingProgress) -> None:
        self.level.setValue(level_percent(progress.level))
        if progress.needed != self.progress.maximum():
            self.progress.setMaximum(progress.needed)
        if progress.done != self.progress.value():
            self.progress.setValue(progress.done)
        if progress.sentence != self.sentence.text():
            self.sentence.setText(progress.sentence)
        note = progress.note or ("" if progress.finished else "Listening…")
        if note != self.note.text():
            self.note.setText(note)

    def _stop(self) -> None:
        if self._reading is not None:
            self._reading.stop()
        if self._source is not None:
            self._source.close()  # a read waiting for the next frame ends now

    def reject(self) -> None:
        self._stop()
        super().reject()

    def accept(self) -> None:
        self._stop()
        super().accept()
