"""The window's answer path: while a card is open, a y / n / a typed in the text box answers it
(never reaching the brain), even when the card is a background job's and her reply streamed
over it."""

from __future__ import annotations

import asyncio

import pytest
from app_support import app_config, type_into
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion.events import ReplyDone, TurnFinished, WorkChanged
from companion.ui.app import CompanionApp


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture
def start_app(make_app, tmp_path):
    """The window app (--no-voice) against the brain at `url`, its workspace in tmp_path."""
    (tmp_path / "workspace").mkdir()
    return lambda url: make_app(app_config(tmp_path, url))


def _event(app: CompanionApp, wanted) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()

    def seen(event) -> None:
        if wanted(event) and not future.done():
            future.set_result(event)

    app.bridge.event.connect(seen)
    return future


def _users(scripted_brain) -> list[str]:
    return [m["content"] for b in scripted_brain.bodies for m in b["messages"] if m["role"] == "user"]


def test_a_y_typed_after_her_reply_covered_a_jobs_card_answers_it_and_never_reaches_the_brain(
        qtbot, tmp_path, scripted_brain, start_app, qt_loop):
    scripted_brain.push(
        {"for": "tidy", "tool_calls": [{"name": "start_work", "arguments": {"task": "JOB: make a file"}}]},
        {"for": "tidy", "text": "[happy] On it, in the background, while we keep talking.",
         "chunks": 6, "chunk_delay": 0.3},
        {"for": "JOB:", "tool_calls": [{"name": "shell", "arguments": {"command": "touch made-by-job"}}]},
        {"for": "JOB:", "text": "[happy] Made the file."},
    )
    app = start_app(scripted_brain.url)

    async def scenario():
        await app.start()
        asked = signal_future(app.bridge.approval_needed)
        replied = _event(app, lambda e: isinstance(e, ReplyDone) and "On it" in e.text)
        type_into(qtbot, app, "please tidy up")
        (request,) = await asked
        await replied  # her reply streamed while the card was open
        card = app.window.approvals.cards[request.request_id]
        if not card.is_armed():
            await signal_future(card.armed)
        done = _event(app, lambda e: isinstance(e, WorkChanged) and e.status == "finished")
        resolved = signal_future(app.bridge.approval_resolved)
        type_into(qtbot, app, "y")
        assert (await resolved)[1] == "approved"
        await done

    qt_loop(scenario(), timeout=60)
    assert app.companion.gate.audit.entries()[-1]["decision"] == "approved"
    assert "y" not in _users(scripted_brain)
    # Typed, so not marked as heard by her microphone.
    assert "🎙" not in app.window.captions.toPlainText()


def test_a_typed_a_never_approves_a_card_that_cannot_be_remembered(
        qtbot, tmp_path, scripted_brain, start_app, qt_loop):
    (tmp_path / "workspace" / "old").mkdir(parents=True)
    scripted_brain.push(
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -r old"}}]},
        {"text": "[neutral] Left it."},
    )
    app = start_app(scripted_brain.url)

    async def scenario():
        await app.start()
        asked = signal_future(app.bridge.approval_needed)
        type_into(qtbot, app, "delete old")
        (request,) = await asked
        card = app.window.approvals.cards[request.request_id]
        if not card.is_armed():
            await signal_future(card.armed)
        type_into(qtbot, app, "a")
        assert card.outcome is None and not card._answered  # still waiting for a real answer
        resolved = signal_future(app.bridge.approval_resolved)
        type_into(qtbot, app, "n")
        assert (await resolved)[1] == "declined"

    qt_loop(scenario(), timeout=60)
    assert (tmp_path / "workspace" / "old").is_dir()
    assert not {"a", "n"} & set(_users(scripted_brain))
    assert "always asks" in app.window.captions.toPlainText()


def _destructive_card(qtbot, app, scripted_brain, tmp_path):
    (tmp_path / "workspace" / "notes_copy").mkdir(parents=True, exist_ok=True)
    scripted_brain.push(
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -r notes_copy"}}]},
        {"text": "[neutral] Done."},
    )

    async def shown():
        await app.start()
        asked = signal_future(app.bridge.approval_needed)
        type_into(qtbot, app, "delete notes_copy")
        (request,) = await asked
        card = app.window.approvals.cards[request.request_id]
        if not card.is_armed():
            await signal_future(card.armed)
        return card

    return shown()


def test_a_typed_yes_never_approves_a_destructive_card_and_says_to_click_and_a_click_does(
        qtbot, tmp_path, scripted_brain, start_app, qt_loop):
    app = start_app(scripted_brain.url)  # --no-voice: nothing to say, only to click

    async def scenario():
        card = await _destructive_card(qtbot, app, scripted_brain, tmp_path)
        assert card.destructive
        for typed in ("yes", "y", "yes, run it"):
            type_into(qtbot, app, typed)
            assert card.outcome is None and not card._answered, typed
        resolved = signal_future(app.bridge.approval_resolved)
        finished = _event(app, lambda e: isinstance(e, TurnFinished))
        card.approve_button.click()
        decision = (await resolved)[1]
        await finished  # the command ran and her turn ended
        return card, decision

    card, decision = qt_loop(scenario(), timeout=60)
    assert decision == "approved"
    shown = app.window.captions.toPlainText()
    assert "Click Yes to run it." in shown and "say" not in shown.split("Click Yes to run it")[1][:20]
    assert "🎙" not in shown  # typed answers are marked as typed
    assert not {"yes", "y", "yes, run it"} & set(_users(scripted_brain))


@pytest.mark.parametrize(("spoken", "saveable", "hint"), [
    (False, False, "Click Yes to run it · Esc: decline"),
    (True, False, "Click Yes to run it · Esc: decline · or say 'yes, run it' or no"),
    (False, True, "Ctrl+Enter: approve once · Ctrl+Shift+Enter: always allow · Esc: decline"),
    (True, True, "Ctrl+Enter: approve once · Ctrl+Shift+Enter: always allow · Esc: decline · or say yes or no"),
])
def test_hints_offer_spoken_answers_only_when_she_can_hear_them(qtbot, spoken, saveable, hint):
    from companion.events import ApprovalNeeded
    from companion.ui.cards.approval_card import ApprovalPanel

    panel = ApprovalPanel()
    qtbot.addWidget(panel)
    panel.spoken_answers = spoken
    card = panel.add_request(ApprovalNeeded("r1", "rm -r notes_copy" if not saveable else "touch a",
                                            "Why I ask.", saveable, 30.0))
    assert card.hint.text() == hint


def test_under_no_voice_the_window_offers_no_spoken_answers(scripted_brain, start_app):
    assert start_app(scripted_brain.url).window.approvals.spoken_answers is False
