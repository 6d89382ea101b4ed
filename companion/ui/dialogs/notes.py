"""☰ → Her notes…: the memory notes she keeps, one file per topic, to read, edit or delete."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from companion.conversations import notes
from companion.errors import could_not_save


class NotesDialog(QDialog):
    """Topics on the left, the chosen topic's file on the right; Save writes it atomically."""

    def __init__(self, data_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Her notes")
        self.resize(640, 460)
        self.data_dir = Path(data_dir)
        self._path: Path | None = None
        self.topics = QListWidget()
        self.topics.currentItemChanged.connect(self._show)
        self.editor = QPlainTextEdit()
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.editor.setFont(font)
        self._saved_text = ""
        self.editor.textChanged.connect(
            lambda: self.save_button.setEnabled(self.editor.toPlainText() != self._saved_text))
        self.status = QLabel()
        self.status.setObjectName("hint")
        self.status.setWordWrap(True)
        self.save_button = QPushButton("Save")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.save)
        self.delete_button = QPushButton("Delete topic")
        self.delete_button.clicked.connect(self.delete)
        self._confirming = False
        right = QWidget()
        side = QVBoxLayout(right)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(self.editor, 1)
        row = QHBoxLayout()
        row.addWidget(self.status, 1)
        row.addWidget(self.delete_button)
        row.addWidget(self.save_button)
        side.addLayout(row)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.topics)
        splitter.addWidget(right)
        splitter.setSizes([180, 460])
        QVBoxLayout(self).addWidget(splitter)
        self.refresh()

    def refresh(self, select: Path | None = None) -> None:
        self.topics.blockSignals(True)
        self.topics.clear()
        for topic in notes.list_topics(self.data_dir):
            item = QListWidgetItem(f"{topic.topic} ({topic.notes})")
            item.setData(Qt.ItemDataRole.UserRole, str(topic.path))
            self.topics.addItem(item)
            if select is not None and topic.path == select:
                self.topics.setCurrentItem(item)
        self.topics.blockSignals(False)
        if self.topics.count() == 0:
            self._path = None
            self.editor.setPlainText("")
            self.editor.setReadOnly(True)
            self.delete_button.setEnabled(False)
            self.status.setText("She has no notes yet. Ask her to remember something.")
            return
        if self.topics.currentItem() is None:
            self.topics.setCurrentRow(0)
        self._show(self.topics.currentItem(), None)

    def _show(self, item: QListWidgetItem | None, _previous) -> None:
        self._confirming = False
        self.delete_button.setText("Delete topic")
        if item is None:
            return
        self._path = Path(item.data(Qt.ItemDataRole.UserRole))
        try:
            text = notes.read_topic(self._path)
        except (OSError, UnicodeDecodeError) as exc:
            self.editor.setPlainText("")
            self.editor.setReadOnly(True)
            self.status.setText(f"I can't read {self._path.name}: {exc}.")
            return
        self.editor.setReadOnly(False)
        self._saved_text = text
        self.editor.setPlainText(text)
        self.delete_button.setEnabled(True)
        self.status.setText(self._path.name)

    def save(self) -> None:
        if self._path is None:
            return
        try:
            notes.save_topic(self._path, self.editor.toPlainText())
        except OSError as exc:
            self.status.setText(f"{could_not_save(self._path.name, self._path.parent, exc)} "
                                "Your text is still here.")
            return
        self.status.setText(f"Saved {self._path.name}.")
        self.refresh(select=self._path)

    def delete(self) -> None:
        """Two clicks: the first asks, the second deletes (no modal box stalling her loop)."""
        if self._path is None:
            return
        if not self._confirming:
            self._confirming = True
            self.delete_button.setText("Really delete?")
            return
        try:
            notes.delete_topic(self._path)
        except OSError as exc:
            self.status.setText(f"I couldn't delete it: {exc.strerror or exc}.")
            return
        self.refresh()
