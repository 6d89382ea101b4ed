"""A background job and an approval card in her window as a new user meets them (issue 37):
the chip never widens the window, her face leaves its thinking bubbles after the result, and
a card's buttons sit side by side, whole, with its hint in sight."""

from __future__ import annotations

import asyncio

import pytest
from app_support import app_config, type_into
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion.events import ApprovalNeeded, Speak, SpeechKind, StateChanged, WorkChanged

LONG_TASK = "JOB: read every note in the workspace and write a summary of the open questions"


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _event(app, matches) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()

    def seen(event) -> None:
        if matches(event) and not future.done():
            future.set_result(event)

    app.bus.subscribe(seen)
    return future


def test_a_background_jobs_chip_never_widens_the_window_and_her_face_stops_thinking_after_it(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    scripted_brain.push(
        {"for": "make me a summary", "tool_calls": [{"name": "start_work", "arguments": {"task": LONG_TASK}}]},
        {"for": "make me a summary", "text": "[happy] I'll do that in the background."},
        {"for": "JOB:", "text": "[happy] Two questions are still open.", "delay": 0.5},
    )
    app = make_app(app_config(tmp_path, scripted_brain.url))
    window = app.window
    width = window.width()
    widths = []

    async def scenario():
        await app.start()
        running = _event(app, lambda e: isinstance(e, WorkChanged) and e.status == "running")
        finished = _event(app, lambda e: isinstance(e, WorkChanged) and e.status == "finished")
        # Subscribed before the job starts: its result line may be said the moment it finishes.
        said = _event(app, lambda e: isinstance(e, Speak) and "Two questions" in e.text)
        turn = signal_future(app.bridge.turn_finished)
        type_into(qtbot, app, "make me a summary")
        await running
        await asyncio.sleep(0)  # the chip is laid out
        widths.append((window.width(), window.minimumSizeHint().width(), window.work_chip.isVisible()))
        await turn
        await finished
        await said
        while window.presence.facts.core != "idle":
            await signal_future(app.bridge.state)

    qt_loop(scenario(), timeout=40)
    (shown_width, minimum, chip_shown), = widths
    assert chip_shown and shown_width == width and minimum <= width
    assert window.width() == width
    assert window.face.expression != "thinking"
    assert not window.state_label.text().startswith(("Thinking", "Working"))


def _request(request_id: str, *, saveable: bool = True) -> ApprovalNeeded:
    return ApprovalNeeded(request_id, "git status --short", "May I check what changed?", saveable, 60.0,
                          access="read")


def test_a_cards_three_buttons_sit_side_by_side_whole_and_its_hint_stays_in_sight(
        qtbot, tmp_path, scripted_brain, make_app):
    app = make_app(app_config(tmp_path, scripted_brain.url))
    window = app.window
    card = window.approvals.add_request(_request("r1"))
    qtbot.waitUntil(lambda: card.isVisible() and card.width() > 0)
    qtbot.waitUntil(lambda: card.approve_button.y() == card.always_button.y() == card.decline_button.y())
    for button in (card.approve_button, card.always_button, card.decline_button):
        assert button.width() >= button.sizeHint().width()  # no label cut at either end
    hint_bottom = card.hint.mapTo(window, card.hint.rect().bottomLeft()).y()
    assert hint_bottom <= window.approvals.mapTo(window, window.approvals.rect().bottomLeft()).y()
    assert window.width() == 460


def test_after_a_jobs_result_is_said_aloud_her_face_leaves_its_thinking_bubbles(
        qtbot, tmp_path, scripted_brain, make_app):
    # The voice loop gives the result line a turn of its own, with no reply tag to end it:
    # the same events, through the real bridge, as her voice session sends them.
    app = make_app(app_config(tmp_path, scripted_brain.url))
    window = app.window
    window.set_voice("ready")
    app.bus.emit(WorkChanged("finished", "tidy the notes", "All tidy."))
    for event in (StateChanged("thinking"), Speak(SpeechKind.SAY, "My background job is done: all tidy."),
                  StateChanged("speaking"), StateChanged("listening")):
        app.bus.emit(event)
    qtbot.waitUntil(lambda: window.state_label.text() == "Listening…")
    assert window.face.expression != "thinking"
