"""Settings → Personality: which personality file she uses, her own copy or a copy of a
shipped template (made on Save), and the editor's door."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QHBoxLayout, QLabel, QPushButton, QWidget

from companion.config import Paths, Settings


class PersonalityTab(QWidget):
    """Which personality file she uses: her own copy, or a copy of a shipped template."""

    chosen = Signal(str, object)
    """Another personality was chosen (not yet saved): her name and `speed:` (None: none)."""

    def __init__(self, settings: Settings, paths: Paths, templates: dict[str, Path],
                 on_edit: Callable[[], None] | None) -> None:
        super().__init__()
        self._paths = paths
        self._templates = templates
        self._chosen = settings.personality
        form = QFormLayout(self)
        self.file_label = QLabel(self._file_text())
        self.file_label.setWordWrap(True)
        self.file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.template = QComboBox()
        for name, path in templates.items():
            # Who she becomes, with the file it comes from ("Pip (gremlin)"); the item's data
            # is the template's name.
            self.template.addItem(f"{_character_name(path) or name} ({name})", name)
        current = self._template_in_use()
        if current is not None:
            self.template.setCurrentIndex(self.template.findData(current))
        self._pending: str | None = None
        """A template chosen but not yet copied (that happens on Save)."""
        use = QPushButton("Use this template")
        use.clicked.connect(self.use_template)
        row = QHBoxLayout()
        row.addWidget(self.template, 1)
        row.addWidget(use)
        edit = QPushButton("Edit…")
        edit.setEnabled(on_edit is not None)
        if on_edit is not None:
            edit.clicked.connect(on_edit)
        form.addRow("Current file", self.file_label)
        form.addRow("Switch to", row)
        form.addRow("", edit)

    def current_path(self) -> Path:
        return Path(self._chosen) if self._chosen else self._paths.personality_file

    def _file_text(self) -> str:
        return str(self.current_path())

    def _template_in_use(self) -> str | None:
        """The template whose copy she uses now ("default" for personality.md), if any."""
        if not self._chosen:
            return "default" if "default" in self._templates else None
        name = Path(self._chosen).name
        for template in self._templates:
            if name == f"personality-{template}.md":
                return template
        return None

    def _copy_path(self, name: str) -> Path:
        return self._paths.config_dir / f"personality-{name}.md"

    def use_template(self) -> None:
        """Point at the user's own copy of the chosen template (made on Save if missing).

        "default" means her usual personality.md; other templates get their own file, so
        switching never overwrites edits the user made to another personality.
        """
        name = self.template.currentData()
        self._pending = None if name == "default" else name
        self._chosen = "" if name == "default" else str(self._copy_path(name))
        self.file_label.setText(self._file_text())
        # Her own copy if she has one (it may be edited), else the template it will be made from.
        path = self.current_path()
        personality = _personality_in(path if path.exists() else self._templates[name])
        if personality is not None:
            self.chosen.emit(personality.name, personality.speed)

    def value(self) -> str:
        return self._chosen

    def commit(self) -> str:
        """On Save: make the chosen template's copy if it is missing; the path to use."""
        if self._pending is not None:
            from companion.paths import atomic_write_text

            copy = self._copy_path(self._pending)
            if not copy.exists():
                atomic_write_text(copy, self._templates[self._pending].read_text(encoding="utf-8"))
        return self._chosen


def _character_name(path: Path) -> str:
    """The `name:` a personality template gives her ("" when it can't be read)."""
    personality = _personality_in(path)
    return getattr(personality, "name", "") or ""


def _personality_in(path: Path):
    """The personality a file holds (companion.persona.Personality), or None when it can't be read."""
    from companion.persona import parse_personality

    try:
        personality, _problems = parse_personality(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return personality
