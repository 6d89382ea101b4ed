"""The window remembers: the conversation after a restart, New conversation, reopening one, her notes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from scripted_brain import user_texts
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.ui.app import CompanionApp


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _config(tmp_path, url: str) -> RunConfig:
    settings = with_overrides(Settings(), brain={"base_url": url},
                              tools={"workspace": str(tmp_path / "workspace")})
    return RunConfig(Paths.default(tmp_path / "config"), settings)


def _menu_action(app: CompanionApp, text: str):
    return next(a for a in app.window.menu_button.menu().actions() if a.text() == text)


async def _ask(qtbot, app: CompanionApp, text: str) -> None:
    finished = signal_future(app.bridge.turn_finished)
    qtbot.keyClicks(app.window.text_box, text)
    qtbot.keyClick(app.window.text_box, Qt.Key.Key_Return)
    await finished


def test_after_closing_and_reopening_the_window_the_transcript_and_her_history_are_back(
        qtbot, tmp_path, scripted_brain, qt_loop):
    scripted_brain.push({"text": "[happy] Hi Sam!"}, {"text": "You're Sam, of course."})
    config = _config(tmp_path, scripted_brain.url)
    first = CompanionApp(config, with_voice=False)
    qtbot.addWidget(first.window)
    first.show()

    async def first_run():
        await first.start()
        await _ask(qtbot, first, "I'm Sam")
        await first.close()

    qt_loop(first_run())
    second = CompanionApp(config, with_voice=False)
    qtbot.addWidget(second.window)
    second.show()

    async def second_run():
        await second.start()
        assert second.window.captions.entries() == [("heard", "I'm Sam"), ("said", "Hi Sam!")]
        await _ask(qtbot, second, "who am I?")
        await second.close()

    qt_loop(second_run())
    assert [m["role"] for m in scripted_brain.bodies[-1]["messages"][1:]] == ["user", "assistant", "user"]
    assert scripted_brain.bodies[-1]["messages"][2] == {"role": "assistant", "content": "[happy] Hi Sam!"}
    assert user_texts(scripted_brain.bodies[-1]) == ["I'm Sam", "who am I?"]
    assert second.window.captions.entries()[-1] == ("said", "You're Sam, of course.")


def test_new_conversation_starts_afresh_and_the_old_one_can_be_found_and_reopened(
        qtbot, tmp_path, scripted_brain, qt_loop):
    scripted_brain.push({"text": "Penguins live in the south."}, {"text": "Hello, fresh start!"},
                        {"text": "Emperor penguins are the tallest."})
    app = CompanionApp(_config(tmp_path, scripted_brain.url), with_voice=False)
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        await app.start()
        await _ask(qtbot, app, "tell me about penguins")
        first = app.companion.conversation_id
        shown = signal_future(app.conversation_shown)
        _menu_action(app, "New conversation").trigger()
        (second,) = await shown
        assert second != first and app.companion.conversation_id == second
        assert app.window.captions.entries() == []
        await _ask(qtbot, app, "hello")
        assert len(scripted_brain.bodies[-1]["messages"]) == 2
        assert user_texts(scripted_brain.bodies[-1]) == ["hello"]
        _menu_action(app, "Conversations…").trigger()
        dialog = app.dialogs.conversations
        assert dialog.list.count() == 2
        dialog.search_box.setText("penguin")
        dialog.refresh()
        assert dialog.list.count() == 1 and "tell me about penguins" in dialog.list.item(0).text()
        dialog.search_box.setText("walrus")
        dialog.refresh()
        assert dialog.list.count() == 0 and dialog.empty.text() == "Nothing we said matches that."
        dialog.search_box.setText("penguin")
        dialog.refresh()
        shown = signal_future(app.conversation_shown)
        dialog.open_button.click()
        assert await shown == (first,)
        assert app.window.captions.entries() == [("heard", "tell me about penguins"),
                                                 ("said", "Penguins live in the south.")]
        await _ask(qtbot, app, "which is tallest?")
        await app.close()

    qt_loop(scenario())
    assert scripted_brain.bodies[-1]["messages"][2]["content"] == "Penguins live in the south."
    assert user_texts(scripted_brain.bodies[-1]) == ["tell me about penguins", "which is tallest?"]


def test_her_notes_can_be_read_edited_and_deleted_in_the_window(qtbot, tmp_path):
    from companion.ui.dialogs.notes import NotesDialog

    memory = tmp_path / "data" / "memory"
    memory.mkdir(parents=True)
    (memory / "birthdays.md").write_text("# Birthdays\n\n## 2026-11-30 10:00\n\nSam: 4 May\n", encoding="utf-8")
    (memory / "films.md").write_text("# Films\n\n## 2026-11-30 10:05\n\nSam likes Alien\n", encoding="utf-8")
    dialog = NotesDialog(tmp_path / "data")
    qtbot.addWidget(dialog)
    assert [dialog.topics.item(i).text() for i in range(dialog.topics.count())] == ["Birthdays (1)", "Films (1)"]
    assert "Sam: 4 May" in dialog.editor.toPlainText()
    dialog.editor.setPlainText("# Birthdays\n\n## 2026-11-30 10:00\n\nSam: 5 May\n")
    assert dialog.save_button.isEnabled()
    dialog.save_button.click()
    assert "Sam: 5 May" in (memory / "birthdays.md").read_text(encoding="utf-8")
    dialog.delete_button.click()
    assert (memory / "birthdays.md").exists() and dialog.delete_button.text() == "Really delete?"
    dialog.delete_button.click()
    assert not (memory / "birthdays.md").exists()
    assert [dialog.topics.item(i).text() for i in range(dialog.topics.count())] == ["Films (1)"]
