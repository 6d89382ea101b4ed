"""The personality editor as a new user meets it (issue 37): a misspelt heading is flagged
where it is, and every front-matter key is highlighted alike."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextCursor
from ui_loop import qt_gc_fixture  # noqa: F401 (fixture)

from companion.persona.store import PersonalityStore
from companion.tools.registry import Registry, builtin_modules
from companion.ui.dialogs.personality_editor import PersonalityEditor


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture
def editor(qtbot, tmp_path) -> PersonalityEditor:
    registry = Registry()
    registry.register_modules(builtin_modules())
    store = PersonalityStore(tmp_path / "personality.md", known_tools=lambda: registry.tools().keys(),
                             copy_default=True)
    editor = PersonalityEditor(store, registry)
    qtbot.addWidget(editor)
    editor.show()
    return editor


def test_a_misspelt_heading_is_flagged_on_its_own_line_not_at_the_end_of_the_file(editor):
    lines = editor.text().splitlines()
    at = lines.index("## Personality")
    lines[at] = "## Personalty"
    editor.editor.setPlainText("\n".join(lines))
    (problem,) = [p for p in editor.check() if "## Personality" in p.message]
    assert problem.line == at + 1
    assert "## Personalty" in problem.message
    (item,) = [editor.problems.item(n) for n in range(editor.problems.count())
               if "## Personalty" in editor.problems.item(n).text()]
    editor.problems.itemClicked.emit(item)
    assert editor.editor.textCursor().block().text() == "## Personalty"


def _colour_at(editor: PersonalityEditor, line_start: str):
    block = editor.editor.document().firstBlock()
    while block.isValid() and not block.text().startswith(line_start):
        block = block.next()
    assert block.isValid(), line_start
    formats = block.layout().formats()
    return next((f.format.foreground().color().name() for f in formats if f.start == 0), None)


def test_face_is_highlighted_like_the_other_front_matter_keys(editor, qtbot):
    editor.editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.waitUntil(lambda: _colour_at(editor, "name:") is not None)
    assert _colour_at(editor, "face:") == _colour_at(editor, "name:") == _colour_at(editor, "voice:")
