"""Her window as a new user meets it in an afternoon (issue 37): the transcript, the pill,
banners and the face, driven through the real window against a scripted brain over HTTP."""

from __future__ import annotations

import asyncio
import time

import pytest
from app_support import app_config, type_into
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication
from scripted_brain import ScriptedBrain
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion.ui.transcript_lines import PAD_X


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


async def until(condition, timeout: float = 10.0) -> None:
    """Wait (the loop keeps running) until `condition()` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def _ask(qtbot, app, text: str):
    finished = signal_future(app.bridge.turn_finished)
    type_into(qtbot, app, text)
    return finished


def test_a_notice_arriving_while_she_streams_leaves_her_reply_one_bubble(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    scripted_brain.push({"text": "[happy] One long reply that streams in many small pieces.",
                         "chunks": 8, "chunk_delay": 0.05})
    app = make_app(app_config(tmp_path, scripted_brain.url))
    sent = []

    def notice_mid_stream(_text: str) -> None:
        if not sent:
            sent.append(True)
            app.window.show_work("done", "tidy the notes", "all tidy")

    async def scenario():
        await app.start()
        app.bridge.reply_delta.connect(notice_mid_stream)
        await _ask(qtbot, app, "tell me something")

    qt_loop(scenario())
    assert sent
    assert app.window.captions.entries() == [
        ("heard", "tell me something"),
        ("said", "One long reply that streams in many small pieces."),
        ("notice", "Background job done: tidy the notes: all tidy"),
    ]


def test_single_newlines_in_a_reply_stay_line_breaks(qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    scripted_brain.push({"text": "[happy] Roses are red\nviolets are blue"})
    app = make_app(app_config(tmp_path, scripted_brain.url))

    async def scenario():
        await app.start()
        await _ask(qtbot, app, "a poem")

    qt_loop(scenario())
    shown = app.window.captions.line_at(1)["shown"]
    assert "red violets" not in shown
    assert shown.replace("\u2028", "\n").splitlines() == ["Roses are red", "violets are blue"]


def test_the_last_letter_of_your_bubble_sits_inside_its_rounded_edge(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    scripted_brain.push({"text": "[happy] Sure."})
    app = make_app(app_config(tmp_path, scripted_brain.url))

    async def scenario():
        await app.start()
        await _ask(qtbot, app, "What time is it in Tokyo right now, please?")

    qt_loop(scenario())
    view = app.window.captions
    bubble = view.line_at(0)["bubble"]
    block = next(view._page.blocks(0))
    layout = block.layout()
    text = layout.lineAt(layout.lineCount() - 1).naturalTextRect().translated(layout.position())
    assert bubble.right() - text.right() >= PAD_X - 1
    assert text.left() - bubble.left() >= PAD_X - 1


def test_tab_into_the_transcript_shows_a_focus_ring_and_typing_there_goes_to_the_text_box(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    app = make_app(app_config(tmp_path, scripted_brain.url))
    qt_loop(app.start())
    window, view = app.window, app.window.captions
    window.activateWindow()
    qtbot.waitUntil(window.text_box.hasFocus)
    unfocused = view.grab().toImage().pixelColor(1, view.height() // 2)
    qtbot.keyClick(window.text_box, Qt.Key.Key_Tab)
    qtbot.waitUntil(view.hasFocus)
    focused = view.grab().toImage().pixelColor(1, view.height() // 2)
    assert focused != unfocused and focused == QColor("#b9a8ff")

    qtbot.keyClicks(QApplication.focusWidget(), "hello")
    assert window.text_box.text() == "hello"
    assert window.text_box.hasFocus()


def test_decision_lines_and_banners_show_commands_in_code_font_without_backticks(
        qtbot, tmp_path, make_app, qt_loop):
    with ScriptedBrain(models=["another-model"]) as brain:
        app = make_app(app_config(tmp_path, brain.url))

        async def scenario():
            await app.start()
            await until(lambda: app.window.banners.banner("brain") is not None)

        qt_loop(scenario())
    banner = app.window.banners.banner("brain")
    app.window.captions.add_notice("Declined `rm -r notes`")
    shown = app.window.captions.line_at(len(app.window.captions.entries()) - 1)["shown"]
    assert shown == "Declined rm -r notes"
    app.window.banners.show_banner("test", "Run `ollama serve` first.")
    label = app.window.banners.banner("test").label
    assert label.textFormat() == Qt.TextFormat.RichText
    assert "<code>ollama serve</code>" in label.text() and "`" not in label.text()
    # Her brain here is no Ollama: the advice never tells the user to run ollama.
    assert "ollama" not in banner.text().lower()


def test_the_offline_pill_banner_and_puzzled_face_go_when_the_brain_comes_back_by_itself(
        qtbot, tmp_path, unused_port, make_app, qt_loop):
    app = make_app(app_config(tmp_path, f"http://127.0.0.1:{unused_port}/v1"))
    app.brain_watch.retry_s = 0.2
    window = app.window

    async def scenario():
        await app.start()
        await until(lambda: window.banners.banner("brain") is not None)
        assert window.state_label.text().startswith("Offline")
        assert window.face.expression == "confused"
        brain = ScriptedBrain().start(port=unused_port)  # the server starts by itself
        try:
            await until(lambda: window.banners.banner("brain") is None)
            return list(brain.requests)
        finally:
            brain.stop()

    requests = qt_loop(scenario())
    assert requests == []  # nobody asked her anything: she noticed by herself
    assert not window.state_label.text().startswith("Offline")
    assert window.face.expression != "confused"


def test_a_qt_callback_outside_any_task_finds_asyncio_so_no_traceback_reaches_the_terminal(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    import threading

    import sniffio
    from PySide6.QtCore import QTimer

    sniffio.thread_local.name = None  # as a fresh process
    app = make_app(app_config(tmp_path, scripted_brain.url))
    answers = []

    async def scenario():
        await app.start()
        called = asyncio.get_running_loop().create_future()

        def from_qt() -> None:  # a Qt timer's callback: no asyncio task is current here
            assert asyncio.current_task() is None
            try:
                answers.append(sniffio.current_async_library())
            except sniffio.AsyncLibraryNotFoundError as exc:
                answers.append(exc)
            called.set_result(None)

        QTimer.singleShot(0, from_qt)
        await called
        thread = threading.Thread(target=lambda: answers.append(sniffio.thread_local.name))
        thread.start()
        thread.join()

    qt_loop(scenario())
    assert answers == ["asyncio", None]  # the Qt thread says asyncio; worker threads say nothing
