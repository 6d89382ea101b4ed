"""The conversation as captions: what she heard, what she said (streamed), and her narration."""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

MAX_ENTRIES = 400
"""Older captions are dropped so a day-long session stays light."""

HEARD, SAID, NARRATION, NOTICE = "heard", "said", "narration", "notice"


class CaptionsView(QScrollArea):
    """A scrollable column of caption bubbles that keeps to the bottom as she talks."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("captions")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        inner.setObjectName("captionsInner")
        self._column = QVBoxLayout(inner)
        self._column.setContentsMargins(10, 8, 10, 8)
        self._column.setSpacing(6)
        self._column.addStretch(1)
        self.setWidget(inner)
        self._entries: list[tuple[str, QLabel, QWidget]] = []
        self._open_reply: QLabel | None = None
        self._stick = True
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._keep_to_bottom)
        bar.valueChanged.connect(lambda value: setattr(self, "_stick", value >= bar.maximum() - 4))

    # --- what the bridge feeds ------------------------------------------------------------
    @Slot(str, bool)
    def add_heard(self, text: str, spoken: bool = True) -> None:
        self._close_reply()
        self._add(HEARD, text)

    @Slot(str)
    def add_reply_delta(self, text: str) -> None:
        if self._open_reply is None:
            self._open_reply = self._add(SAID, "")
        self._open_reply.setText(self._open_reply.text() + text)

    @Slot(str)
    def finish_reply(self, text: str) -> None:
        """One model round's whole reply: it replaces the streamed pieces (or drops an empty one)."""
        label = self._open_reply
        self._open_reply = None
        if label is None:
            if text.strip():
                self._add(SAID, text.strip())
            return
        if text.strip():
            label.setText(text.strip())
        elif not label.text().strip():
            self._remove(label)

    @Slot(str, str, str)
    def add_speech(self, kind: str, text: str, tool: str = "") -> None:
        """A line she says that is not reply text: narration while tools run, or a notice."""
        self._close_reply()
        self._add(SAID if kind == "say" else NARRATION, text)

    @Slot(str)
    def add_notice(self, text: str) -> None:
        self._close_reply()
        self._add(NOTICE, text)

    def clear(self) -> None:
        """Empty the view (a new conversation)."""
        self._open_reply = None
        for _kind, _label, row in self._entries:
            self._column.removeWidget(row)
            row.deleteLater()
        self._entries.clear()

    def load(self, entries) -> None:
        """Show a saved conversation's lines (companion.conversations.Entry), replacing what is shown."""
        self.clear()
        for entry in entries[-MAX_ENTRIES:]:
            kind = {"heard": HEARD, "said": SAID, "notice": NOTICE}.get(entry.kind, NARRATION)
            self._add(kind, entry.text)

    # --- reading back (tests, copy) -------------------------------------------------------
    def entries(self) -> list[tuple[str, str]]:
        return [(kind, label.text()) for kind, label, _row in self._entries]

    # --- layout ---------------------------------------------------------------------------
    def _add(self, kind: str, text: str) -> QLabel:
        label = QLabel(text)
        label.setObjectName(kind)
        label.setTextFormat(Qt.TextFormat.PlainText)  # what people say is never markup
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row = QWidget()
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        if kind == HEARD:
            line.addStretch(1)
            line.addWidget(label, 4)
        else:
            line.addWidget(label, 4)
            line.addStretch(1)
        self._column.insertWidget(self._column.count() - 1, row)
        self._entries.append((kind, label, row))
        while len(self._entries) > MAX_ENTRIES:
            self._remove(self._entries[0][1])
        return label

    def _remove(self, label: QLabel) -> None:
        for index, (_kind, existing, row) in enumerate(self._entries):
            if existing is label:
                del self._entries[index]
                self._column.removeWidget(row)
                row.deleteLater()
                return

    def _close_reply(self) -> None:
        if self._open_reply is not None and not self._open_reply.text().strip():
            self._remove(self._open_reply)
        self._open_reply = None

    def _keep_to_bottom(self, _minimum: int, maximum: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(maximum)
