"""Settings → Voice → "Preview voice": she says a line in the voice, speed and pitch chosen in the
tab (not yet saved), so a voice can be heard before it is kept."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton

from companion.config import VoiceSettings
from companion.ui.settings.tabs import VoiceTab

VoicePreview = Callable[[VoiceSettings], Awaitable[str]]
NOT_RUNNING = "Her voice is not running, so there is nothing to preview with yet."


class VoicePreviewRow:
    """A button and its sentence in the tab's "Hearing and voice" section."""

    SECTION = "Hearing and voice"

    def __init__(self, tab: VoiceTab, preview: VoicePreview | None) -> None:
        self._tab = tab
        self._preview = preview
        self.button = QPushButton("Preview voice")
        self.button.setToolTip("Hear the voice, speed and pitch chosen above, before you save them")
        self.button.setEnabled(preview is not None)
        self.button.clicked.connect(self._start)
        self.running: asyncio.Future | None = None
        """The preview in progress (or the last one)."""
        self.result = QLabel("" if preview is not None else NOT_RUNNING)
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        tab.add_row(self.SECTION, "", self.button)
        tab.add_row(self.SECTION, "", self.result)

    def _start(self) -> None:
        self.running = asyncio.ensure_future(self.preview())

    async def preview(self) -> str:
        """Say the preview line with the tab's draft voice settings; show what happened."""
        if self._preview is None:
            return NOT_RUNNING
        self.button.setEnabled(False)
        self.result.setText("Loading the voice…")
        try:
            sentence = await self._preview(self._tab.values())
        except Exception as exc:  # a voice that can't load: say so, keep the dialog usable
            sentence = f"That voice didn't play: {exc}"
        finally:
            self.button.setEnabled(True)
        self.result.setText(sentence)
        return sentence
