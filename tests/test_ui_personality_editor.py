"""The personality editor: save applies at once, problems with lines, preview, external edits."""

from __future__ import annotations

import pytest
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion.brain.narration import resolve_lines
from companion.persona.store import PersonalityStore, shipped_default
from companion.tools.registry import Registry, builtin_modules
from companion.ui.personality_editor import PersonalityEditor


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture
def registry() -> Registry:
    registry = Registry()
    registry.register_modules(builtin_modules())
    return registry


@pytest.fixture
def store(tmp_path, registry) -> PersonalityStore:
    return PersonalityStore(tmp_path / "personality.md", known_tools=lambda: registry.tools().keys(),
                            copy_default=True)


def _editor(qtbot, store, registry, **kwargs) -> PersonalityEditor:
    editor = PersonalityEditor(store, registry, **kwargs)
    qtbot.addWidget(editor)
    editor.show()
    return editor


def _with_get_time_announce(text: str, line: str) -> str:
    return text.replace("get_time:\n  announce: Let me check the clock.", f"get_time:\n  announce: {line}")


def test_saving_changes_the_next_announce_at_once(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    editor.editor.setPlainText(_with_get_time_announce(editor.text(), "Peeking at my pocket watch."))
    assert editor.save()
    spec = registry.tools()["get_time"]
    assert resolve_lines(spec, store.current.patterns.get("get_time")).announce == "Peeking at my pocket watch."
    assert "Peeking at my pocket watch." in store.path.read_text(encoding="utf-8")
    assert editor.status.text().startswith("Saved.")


def test_problems_are_listed_with_line_numbers_and_a_click_jumps_there(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    lines = editor.text().splitlines()
    broken_at = lines.index("## Quirks") + 1
    lines[broken_at - 1] = "## Quirk"
    editor.editor.setPlainText("\n".join(lines))
    problems = editor.check()
    assert any("missing section '## Quirks'" in str(p) for p in problems)
    assert editor.problems.count() == len(problems)
    assert editor.problems.item(0).text().startswith("line ")
    target = int(editor.problems.item(0).text().split()[1].rstrip(":"))
    editor.problems.itemClicked.emit(editor.problems.item(0))
    assert editor.editor.textCursor().blockNumber() == target - 1


def test_a_file_with_problems_is_saved_but_the_last_good_one_stays_in_use(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    good = store.current
    editor.editor.setPlainText("---\nname: [unclosed\n---\n")
    assert not editor.save()
    assert store.path.read_text(encoding="utf-8") == "---\nname: [unclosed\n---\n"  # nothing lost
    assert store.current == good
    assert "keeps her last good personality" in editor.status.text()


def test_preview_plays_the_four_lines_from_the_unsaved_text(qtbot, store, registry):
    spoken: list[list[tuple[str, str]]] = []
    editor = _editor(qtbot, store, registry, preview=lambda lines: spoken.append(lines) or True)
    editor.editor.setPlainText(_with_get_time_announce(editor.text(), "Tick tock, checking."))
    editor.tool.setCurrentText("get_time")
    editor.preview_button.click()
    spec = registry.tools()["get_time"]
    assert spoken == [[("announce", "Tick tock, checking."), ("heartbeat", spec.heartbeat[0]),
                       ("complete", spec.complete), ("fail", spec.fail)]]


def test_preview_without_a_voice_shows_the_lines_in_writing(qtbot, store, registry):
    editor = _editor(qtbot, store, registry, preview=lambda lines: False)
    editor.tool.setCurrentText("get_time")
    editor.preview_button.click()
    assert "voice isn't ready" in editor.status.text() and "ANNOUNCE: Let me check the clock." in editor.status.text()


def test_revert_to_default_puts_the_shipped_file_back_in_the_editor(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    editor.editor.setPlainText("scribbles")
    editor.revert_to_default()
    assert editor.text() == shipped_default().read_text(encoding="utf-8")


def test_a_change_made_in_another_editor_is_picked_up(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    outside = _with_get_time_announce(editor.text(), "Consulting the sundial.")
    with qtbot.waitSignal(editor.watcher.fileChanged, timeout=5000):
        store.path.write_text(outside, encoding="utf-8")
    qtbot.waitUntil(lambda: editor.text() == outside, timeout=5000)
    assert store.current.patterns["get_time"]["announce"] == "Consulting the sundial."


def test_an_outside_change_never_overwrites_unsaved_edits(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    editor.editor.setPlainText(editor.text() + "\nmy unsaved thought\n")
    mine = editor.text()
    with qtbot.waitSignal(editor.watcher.fileChanged, timeout=5000):
        store.path.write_text(_with_get_time_announce(mine, "Outside."), encoding="utf-8")
    qtbot.waitUntil(editor.reload_button.isVisible, timeout=5000)
    assert editor.text() == mine


def test_a_good_save_announces_itself_so_her_narration_is_synthesized_again(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    editor.editor.setPlainText(_with_get_time_announce(editor.text(), "Consulting the sundial."))
    with qtbot.waitSignal(editor.applied, timeout=1000):
        assert editor.save()
    editor.editor.setPlainText("---\nname: [unclosed\n---\n")
    with qtbot.assertNotEmitted(editor.applied):
        assert not editor.save()
