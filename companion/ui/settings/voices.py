"""Settings → Voice → Knowing voices: the user's yes or no, the voiceprints kept and a way to forget them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QFormLayout, QLabel, QPushButton

from companion.config import VoiceSettings
from companion.voice.voiceprint.enrolment import Enrolment
from companion.voice.voiceprint.store import VoiceprintStore

__all__ = ["VOICES_SECTION", "VoicesRows"]

VOICES_SECTION = "Knowing voices"
ASK = ("She can learn your voice from the times you call her, so that the follow-up window, a spoken "
       "answer to a card and stopping her belong to you, not to a guest or the TV. Only numbers "
       "describing your voice are kept, in her data folder; no audio, and nothing leaves this computer.")


class VoicesRows:
    """`values(voice)` puts the choice into `voice`; Forget deletes the prints at once (as deleting a file would)."""

    def __init__(self, voice: VoiceSettings, folder: Path | None) -> None:
        self._asked = voice.know_voices != "ask"
        self.know = QCheckBox("Know my voice (learned from my calls)")
        self.know.setChecked(voice.know_voices == "yes")
        self.know.toggled.connect(self._touched)
        self.explain = QLabel(ASK)
        self.explain.setWordWrap(True)
        self.prints = QLabel()
        self.prints.setWordWrap(True)
        self.forget = QPushButton("Forget my voice")
        self.forget.clicked.connect(self._forget)
        self._store = VoiceprintStore(folder) if folder is not None else None
        self._show()

    def fill(self, form: QFormLayout) -> None:
        form.addRow("", self.know)
        form.addRow("", self.explain)
        form.addRow("Kept", self.prints)
        form.addRow("", self.forget)

    def _touched(self, _checked: bool) -> None:
        self._asked = True

    def _show(self) -> None:
        store = self._store
        listing = store.listing() if store is not None else []
        if not listing:
            self.prints.setText("No voiceprint: she knows no voice.")
        else:
            lines = [f"{'Your voice' if name == 'you' else name}: made {made}, {seconds:.0f} s of speech "
                     f"from {count} utterances" for name, made, seconds, count in listing]
            lines.append(Enrolment(store, 0.0).state().sentence())
            self.prints.setText("\n".join(lines))
        self.forget.setEnabled(bool(listing))

    def _forget(self) -> None:
        if self._store is not None:
            for name in self._store.names():
                self._store.delete(name)
        self._show()

    def values(self, voice: VoiceSettings) -> VoiceSettings:
        if not self._asked:
            return replace(voice, know_voices="ask")  # not answered here: still to be asked
        return replace(voice, know_voices="yes" if self.know.isChecked() else "no")
