"""☰ → Conversations…: her past conversations, searchable, to reopen one."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from companion.conversations import ConversationSummary

SEARCH_DELAY_MS = 150
"""Search as the user types, once they pause: one query per pause, not per key."""


class ConversationsDialog(QDialog):
    """Lists conversations from `search(text)`; `chosen(id)` when the user opens one."""

    chosen = Signal(int)

    def __init__(self, search: Callable[[str], list[ConversationSummary]], current: int | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Conversations")
        self.resize(440, 480)
        self._search = search
        self._current = current
        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText("Search what was said…")
        self.search_box.setClearButtonEnabled(True)
        self.list = QListWidget()
        self.list.itemActivated.connect(lambda _item: self._open())
        self.empty = QLabel()
        self.empty.setObjectName("hint")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.open_button = buttons.addButton("Open", QDialogButtonBox.ButtonRole.AcceptRole)
        self.open_button.clicked.connect(self._open)
        buttons.rejected.connect(self.reject)
        self._timer = QTimer(self, singleShot=True, interval=SEARCH_DELAY_MS)
        self._timer.timeout.connect(self.refresh)
        self.search_box.textChanged.connect(lambda _text: self._timer.start())
        column = QVBoxLayout(self)
        column.addWidget(self.search_box)
        column.addWidget(self.list, 1)
        column.addWidget(self.empty)
        column.addWidget(buttons)
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        found = self._search(self.search_box.text())
        for summary in found:
            label = summary.label() + ("  (current)" if summary.id == self._current else "")
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, summary.id)
            item.setToolTip(f"{summary.turns} turns")
            self.list.addItem(item)
        if found:
            self.list.setCurrentRow(0)
        searching = bool(self.search_box.text().strip())
        self.empty.setText("" if found else ("Nothing we said matches that." if searching
                                             else "No conversations yet."))
        self.empty.setVisible(not found)
        self.open_button.setEnabled(bool(found))

    def _open(self) -> None:
        item = self.list.currentItem()
        if item is None:
            return
        self.chosen.emit(int(item.data(Qt.ItemDataRole.UserRole)))
        self.accept()
