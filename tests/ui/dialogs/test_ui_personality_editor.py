"""The personality editor: save applies at once, problems with lines, preview, external edits."""

from __future__ import annotations

import pytest
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.brain.narration import resolve_lines
from companion.persona.store import PersonalityStore, shipped_default
from companion.tools.registry import Registry, builtin_modules
from companion.ui.dialogs.personality_editor import PersonalityEditor


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


def test_clicking_a_problem_goes_to_its_file_line_even_when_lines_above_wrap(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    editor.resize(360, 600)
    long_line = "She rambles " * 30
    text = editor.text().replace("## Quirks", long_line + "\n" + long_line + "\n## Quirk", 1)
    editor.editor.setPlainText(text)
    problems = editor.check()
    problem = next(p for p in problems if "Quirks" in p.message)
    wrapped = editor.editor.document().findBlockByNumber(problem.line - 1)
    assert wrapped.firstLineNumber() != wrapped.blockNumber()  # the lines above do wrap
    row = next(i for i in range(editor.problems.count()) if "Quirks" in editor.problems.item(i).text())
    editor.problems.itemClicked.emit(editor.problems.item(row))
    assert editor.editor.textCursor().blockNumber() == problem.line - 1


def test_problems_are_underlined_at_their_line_and_numbered_in_the_gutter(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    editor.editor.setPlainText(_with_get_time_announce(editor.text(), "Time: let me check."))
    problems = editor.check()
    assert editor.editor.problem_lines() == sorted({p.line for p in problems})
    assert editor.editor.gutter.width() >= editor.editor.fontMetrics().horizontalAdvance("99")


def test_yaml_mistakes_are_explained_without_parser_jargon(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    broken = editor.text().replace("get_time:\n  announce: Let me check the clock.",
                                   "get_time:\n  announce: Let me check the clock.\n - stray", 1)
    editor.editor.setPlainText(broken)
    (problem,) = [p for p in editor.check() if "Tool voice patterns" in p.message]
    assert "<block end>" not in problem.message and "indented" in problem.message
    assert broken.splitlines()[problem.line - 1] == " - stray"


def test_unsaved_edits_show_in_the_title_and_the_status_stops_saying_saved(qtbot, store, registry):
    editor = _editor(qtbot, store, registry)
    editor.editor.setPlainText(_with_get_time_announce(editor.text(), "Tick."))
    assert editor.isWindowModified()
    assert editor.save() and not editor.isWindowModified()
    assert editor.status.text().startswith("Saved.")
    editor.editor.insertPlainText("more")
    assert editor.isWindowModified() and not editor.status.text().startswith("Saved")


def _answer(qtbot, editor, button):
    qtbot.waitUntil(lambda: editor._asking is not None and editor._asking.isVisible(), timeout=2000)
    editor._asking.button(button).click()


def test_closing_with_unsaved_edits_asks_and_cancel_keeps_them(qtbot, store, registry):
    from PySide6.QtWidgets import QMessageBox

    editor = _editor(qtbot, store, registry)
    editor.editor.setPlainText(editor.text() + "\nan unsaved thought\n")
    editor.close()
    _answer(qtbot, editor, QMessageBox.StandardButton.Cancel)
    assert editor.isVisible() and "an unsaved thought" in editor.text()
    editor.close()
    _answer(qtbot, editor, QMessageBox.StandardButton.Save)
    assert not editor.isVisible()
    assert "an unsaved thought" in store.path.read_text(encoding="utf-8")


def test_quitting_with_unsaved_personality_edits_asks_first(qtbot, tmp_path, scripted_brain, qt_loop):
    from app_support import app_config
    from PySide6.QtWidgets import QMessageBox

    from companion.ui.app import CompanionApp

    app = CompanionApp(app_config(tmp_path, scripted_brain.url), with_voice=False)
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        await app.start()
        app.open_personality_editor()
        editor = app.dialogs.editor
        editor.editor.setPlainText(editor.text() + "\nkeep me\n")
        app.request_quit()
        _answer(qtbot, editor, QMessageBox.StandardButton.Cancel)
        assert not app.closed.is_set() and app.window.isVisible()
        app.window.close()  # the window's close button asks the same way
        _answer(qtbot, editor, QMessageBox.StandardButton.Discard)
        await app.closed.wait()
        return editor

    qt_loop(scenario())
    assert "keep me" not in app.companion.personality.path.read_text(encoding="utf-8")
