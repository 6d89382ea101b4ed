"""The personality editor: Markdown with highlighted sections, live problems, Save, Preview.

Save writes the file atomically and the store applies it at once (a file with problems is
saved, never lost, and she keeps her last good version). Edits made in another editor are
picked up through a QFileSystemWatcher. Unsaved edits show in the title and are never thrown
away without asking (closing the editor, or quitting her).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, Qt, QTimer, Signal
from PySide6.QtGui import (
    QCloseEvent,
    QColor,
    QFont,
    QKeySequence,
    QShortcut,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from companion.brain.narration import resolve_lines
from companion.persona.document import FRONT_MATTER_KEYS, REQUIRED_SECTIONS, parse_personality
from companion.persona.store import PersonalityStore, shipped_default
from companion.tools.registry import Registry
from companion.ui.dialogs.code_editor import NumberedEditor

Preview = Callable[[list[tuple[str, str]]], bool]
"""Speak (kind, text) lines in her voice; False when she has no voice right now."""
CHECK_DELAY_MS = 300


def _format(color: str, *, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(color))
    if bold:
        fmt.setFontWeight(QFont.Weight.Bold)
    fmt.setFontItalic(italic)
    return fmt


_MISSING = re.compile(r"^missing section '## (.+)'$")
_HEADING = re.compile(r"^##\s+(.+?)\s*#*\s*$")


def near_headings(problems: list, text: str) -> list:
    """A missing section whose heading is only misspelt ("## Personalty") is shown on that
    heading's line, saying which was meant, rather than at the end of the file."""
    required = {title.lower() for title in REQUIRED_SECTIONS}
    headings = [(n, m.group(1)) for n, line in enumerate(text.splitlines(), 1)
                if (m := _HEADING.match(line)) and m.group(1).lower() not in required]
    shown = []
    for problem in problems:
        missing = _MISSING.match(problem.message)
        if missing and headings:
            close = difflib.get_close_matches(missing.group(1).lower(), [h.lower() for _n, h in headings],
                                              n=1, cutoff=0.6)
            if close:
                line, heading = next((n, h) for n, h in headings if h.lower() == close[0])
                problem = replace(problem, line=line, message=f"{problem.message}: is '## {heading}' meant?")
        shown.append(problem)
    return shown


class PersonalityHighlighter(QSyntaxHighlighter):
    """Headings, front matter, tool pattern keys and [emotion] tags, each in its own colour."""

    RULES = (
        (re.compile(r"^##\s.*$"), _format("#ffc66b", bold=True)),
        (re.compile(r"^#\s.*$"), _format("#ff9fb8", bold=True)),
        (re.compile(r"^---\s*$"), _format("#8d88a8")),
        (re.compile(rf"^({'|'.join(FRONT_MATTER_KEYS)}):"), _format("#5ee0c0")),
        (re.compile(r"^[A-Za-z_][\w:.-]*:\s*$"), _format("#b7a6ff", bold=True)),
        (re.compile(r"^\s+(announce|heartbeat|complete|fail):"), _format("#5ee0c0")),
        (re.compile(r"\[[a-z]+\]"), _format("#ff9fb8", italic=True)),
        (re.compile(r"^\s*[-*]\s"), _format("#ffc66b")),
    )

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt name)
        for pattern, fmt in self.RULES:
            for match in pattern.finditer(text):
                self.setFormat(match.start(), match.end() - match.start(), fmt)


class PersonalityEditor(QDialog):
    applied = Signal()
    """A save put the new personality in use (her narration lines may have changed)."""

    def __init__(self, store: PersonalityStore, registry: Registry | None = None, *,
                 preview: Preview | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.path = store.path
        """The file this editor was opened on (Settings may switch her to another)."""
        self.registry = registry
        self._preview = preview
        self.setWindowTitle(f"Personality: {store.path.name}[*]")
        self.resize(760, 640)
        self.editor = NumberedEditor()
        self.highlighter = PersonalityHighlighter(self.editor.document())
        self.problems = QListWidget()
        self.problems.itemActivated.connect(self._jump)
        self.problems.itemClicked.connect(self._jump)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.tool = QComboBox()
        self.tool.addItems(sorted(registry.tools()) if registry is not None else [])
        self.preview_button = QPushButton("Preview")
        self.preview_button.setToolTip("Hear this tool's announce, heartbeat, complete and fail lines")
        self.preview_button.clicked.connect(self.preview_tool)
        self.save_button = QPushButton("Save")
        self.save_button.clicked.connect(self.save)
        self.revert_button = QPushButton("Revert to default")
        self.revert_button.clicked.connect(self.revert_to_default)
        self.reload_button = QPushButton("Load the file's new version")
        self.reload_button.setVisible(False)
        self.reload_button.clicked.connect(self.reload_from_disk)
        QShortcut(QKeySequence.StandardKey.Save, self, activated=self.save)
        self._layout()
        self._check_timer = QTimer(self, singleShot=True, interval=CHECK_DELAY_MS)
        self._check_timer.timeout.connect(self.check)
        self._saved_text = self._read_file()
        self.editor.setPlainText(self._saved_text)
        self.editor.textChanged.connect(self._check_timer.start)
        self.editor.textChanged.connect(self._edited)
        self._asking: QMessageBox | None = None
        self._after_close: list[Callable[[], None]] = []
        self.watcher = QFileSystemWatcher(self)
        self._watch()
        self.watcher.fileChanged.connect(self._changed_on_disk)
        self.watcher.directoryChanged.connect(self._changed_on_disk)
        self.check()

    def _layout(self) -> None:
        tools = QHBoxLayout()
        tools.addWidget(QLabel("Tool:"))
        tools.addWidget(self.tool, 1)
        tools.addWidget(self.preview_button)
        buttons = QHBoxLayout()
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.reload_button)
        buttons.addStretch(1)
        buttons.addWidget(self.save_button)
        lower = QWidget()
        column = QVBoxLayout(lower)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(QLabel("Problems (click one to jump to its line):"))
        column.addWidget(self.problems)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.editor)
        splitter.addWidget(lower)
        splitter.setStretchFactor(0, 4)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(splitter, 1)
        layout.addLayout(tools)
        layout.addWidget(self.status)
        layout.addLayout(buttons)

    # --- checking and saving --------------------------------------------------------------
    def text(self) -> str:
        return self.editor.toPlainText()

    def check(self) -> list:
        problems = near_headings(self.store.check(self.text()), self.text())
        self.problems.clear()
        marks: dict[int, str] = {}
        for problem in problems:
            item = QListWidgetItem(str(problem))
            item.setData(Qt.ItemDataRole.UserRole, problem.line)
            self.problems.addItem(item)
            marks[problem.line] = "\n".join(filter(None, (marks.get(problem.line), problem.message)))
        self.editor.mark_problems(marks)
        return problems

    def is_dirty(self) -> bool:
        """The text differs from what the file holds (what this editor last loaded or saved)."""
        return self.text() != self._saved_text

    def _edited(self) -> None:
        dirty = self.is_dirty()
        self.setWindowModified(dirty)
        if dirty and self.status.text().startswith("Saved"):
            self.status.setText("Edited since the last save.")

    def save(self) -> bool:
        """Write the file atomically and apply it; True when it is in use now."""
        text = self.text()
        try:
            problems = self.store.save(text)
        except OSError as exc:
            self.status.setText(f"I couldn't save {self.store.path}: {exc}. Your text is still here.")
            return False
        self._saved_text = text
        self.setWindowModified(False)
        self.reload_button.setVisible(False)
        self._watch()
        self.check()
        fatal = [p for p in problems if p.fatal]
        if fatal:
            self.status.setText(f"Saved, but it has {len(fatal)} problem(s), so she keeps her last good "
                                "personality until they are fixed.")
            return False
        self.status.setText("Saved. She uses it from now on.")
        self.applied.emit()
        return True

    def revert_to_default(self) -> None:
        """Put the shipped default in the editor (undoable; Save makes it stick)."""
        cursor = self.editor.textCursor()
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.insertText(shipped_default().read_text(encoding="utf-8"))
        self.status.setText("The default personality is in the editor. Save to use it, or Undo.")

    # --- preview --------------------------------------------------------------------------
    def lines_for(self, tool: str) -> list[tuple[str, str]]:
        """The tool's lines as the editor's text would make them (unsaved edits included)."""
        if self.registry is None or tool not in self.registry.tools():
            return []
        personality, _problems = parse_personality(self.text())
        lines = resolve_lines(self.registry.tools()[tool], personality.patterns.get(tool))
        return [("announce", lines.announce), ("heartbeat", lines.heartbeat[0]),
                ("complete", lines.complete), ("fail", lines.fail)]

    def preview_tool(self) -> None:
        lines = self.lines_for(self.tool.currentText())
        if not lines:
            return
        spoken = self._preview is not None and self._preview(lines)
        listing = "   ".join(f"{kind.upper()}: {text}" for kind, text in lines)
        self.status.setText(listing if spoken else f"(Her voice isn't ready, so here they are.) {listing}")

    # --- the file on disk -----------------------------------------------------------------
    def _read_file(self) -> str:
        try:
            return self.store.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return shipped_default().read_text(encoding="utf-8")

    def _watch(self) -> None:
        # Atomic saves replace the file, which drops it from the watcher: watch the folder too.
        path = self.store.path
        for watched in (str(path), str(path.parent)):
            if Path(watched).exists() and watched not in self.watcher.files() + self.watcher.directories():
                self.watcher.addPath(watched)

    def _changed_on_disk(self, _path: str) -> None:
        self._watch()
        on_disk = self._read_file()
        if on_disk == self._saved_text:
            return
        self.store.refresh()
        if self.text() == self._saved_text:
            self._saved_text = on_disk
            self.editor.setPlainText(on_disk)
            self.setWindowModified(False)
            self.status.setText("The file changed in another editor; this is the new version.")
        else:
            self.reload_button.setVisible(True)
            self.status.setText("The file changed in another editor. Load its new version "
                                "(your unsaved edits here would be replaced), or Save to keep yours.")

    def reload_from_disk(self) -> None:
        self._saved_text = self._read_file()
        self.editor.setPlainText(self._saved_text)
        self.setWindowModified(False)
        self.reload_button.setVisible(False)

    def _jump(self, item: QListWidgetItem) -> None:
        # The file's line, not the display line: wrapped lines above it must not shift it.
        self.editor.go_to_line(int(item.data(Qt.ItemDataRole.UserRole)))

    # --- closing with unsaved edits -------------------------------------------------------
    def ask_to_close(self, then: Callable[[], None] | None = None) -> bool:
        """Close now if nothing is unsaved (True); otherwise ask Save / Discard / Cancel and call
        `then` once the editor has closed (never if the user cancels)."""
        if then is not None:
            self._after_close.append(then)
        if not self.isVisible() or not self.is_dirty():
            self._finish_closing()
            return True
        if self._asking is None:
            box = QMessageBox(QMessageBox.Icon.Question, "Unsaved personality",
                              f"Save your changes to {self.store.path.name} before closing?",
                              QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                              | QMessageBox.StandardButton.Cancel, self)
            box.setDefaultButton(QMessageBox.StandardButton.Save)
            box.finished.connect(lambda result: self._answered(box.standardButton(box.clickedButton())))
            self._asking = box
            box.open()  # never exec(): a nested loop would stall asyncio
        return False

    def _answered(self, button: QMessageBox.StandardButton) -> None:
        self._asking = None
        if button == QMessageBox.StandardButton.Save:
            self.save()  # a file with problems is saved too: nothing is lost
        elif button != QMessageBox.StandardButton.Discard:
            self._after_close.clear()  # Cancel (or Esc): stay, and whoever asked does not go on
            return
        self._finish_closing()

    def _finish_closing(self) -> None:
        self._saved_text = self.text()  # what is on screen is now saved or knowingly discarded
        self.setWindowModified(False)
        super().close()
        pending, self._after_close = self._after_close, []
        for then in pending:
            then()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt name)
        if self.is_dirty():
            event.ignore()
            self.ask_to_close()
        else:
            event.accept()

    def reject(self) -> None:  # Esc
        self.ask_to_close()
