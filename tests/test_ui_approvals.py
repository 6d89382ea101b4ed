"""Approval cards against the real gate: approve, always, decline, keys, voice, and expiry."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion import events as ev
from companion.safety.approval import CardApprover, Decision
from companion.safety.gate import build_gate
from companion.ui.approval_card import spoken_answer
from companion.ui.bridge import EventBridge
from companion.ui.window import CompanionWindow


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""

COMMAND = "touch notes.txt"


@pytest.fixture
def setup(qtbot, tmp_path):
    bus = ev.EventBus()
    bridge = EventBridge()
    bridge.attach(bus)
    window = CompanionWindow()
    qtbot.addWidget(window)
    window.connect_bridge(bridge)
    window.show()
    gate = build_gate(tmp_path, tmp_path / "approvals.toml", tmp_path / "data", bus=bus,
                      approver=CardApprover())
    window.approvals.set_answer(lambda rid, decision, always: gate.answer(rid, decision, always=always))
    assert gate.precheck(COMMAND).how == "ask"
    return window, bridge, bus, gate


def _ask(gate, bridge, *, channel="text", timeout_s=None, command=COMMAND):
    """Start a gate review; returns (verdict task, future of the card's request)."""
    shown = signal_future(bridge.approval_needed)
    verdict = asyncio.ensure_future(gate.review(command, channel=channel, timeout_s=timeout_s))
    return verdict, shown


def _decisions(gate) -> list[str]:
    return [entry["decision"] for entry in gate.audit.entries()]


def test_approve_once_runs_it_and_saves_nothing(setup, qt_loop):
    window, bridge, _bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        card = window.approvals.cards[request.request_id]
        assert card.command_label.text() == COMMAND
        card.approve_button.click()
        resolved = signal_future(bridge.approval_resolved)
        result = await verdict
        await resolved
        return result, card

    verdict, card = qt_loop(scenario())
    assert verdict.allowed
    assert card.outcome == "approved"
    assert gate.grants.current().lines == ()
    assert _decisions(gate) == ["approved"]


def test_always_allow_saves_the_exact_command(setup, qt_loop):
    window, bridge, _bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        window.approvals.cards[request.request_id].always_button.click()
        return await verdict

    assert qt_loop(scenario()).allowed
    assert gate.grants.current().lines == (COMMAND,)


def test_decline_by_keyboard_refuses_it(setup, qtbot, qt_loop):
    window, bridge, _bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        qtbot.keyClick(window.approvals.cards[request.request_id], Qt.Key.Key_N)
        return await verdict

    verdict = qt_loop(scenario())
    assert not verdict.allowed and verdict.decision is Decision.DECLINED
    assert _decisions(gate) == ["declined"]


def test_a_spoken_yes_answers_the_card(setup, qt_loop):
    _window, bridge, bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge, channel="voice")
        await shown
        bus.emit(ev.UserHeard("Yes, go ahead.", spoken=True))
        return await verdict

    assert qt_loop(scenario()).allowed


def test_a_typed_yes_is_not_taken_as_an_answer(setup, qt_loop):
    window, bridge, _bus, _gate = setup
    assert window.approvals.hear("yes", spoken=False) is False


def test_an_unanswered_card_expires_and_is_recorded_as_expired(setup, qt_loop):
    window, bridge, _bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge, timeout_s=0.3)
        (request,) = await shown
        resolved = signal_future(bridge.approval_resolved)
        result = await verdict
        await resolved
        return result, window.approvals.cards[request.request_id]

    verdict, card = qt_loop(scenario())
    assert verdict.decision is Decision.EXPIRED and not verdict.allowed
    assert card.outcome == "expired" and "Nobody answered" in card.status.text()
    assert not card.approve_button.isEnabled()
    assert _decisions(gate) == ["expired"]


def test_a_line_that_always_asks_offers_no_always_button(setup, qt_loop):
    window, bridge, _bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge, command="rm -rf build")
        (request,) = await shown
        card = window.approvals.cards[request.request_id]
        visible = card.always_button.isVisibleTo(card)
        card.decline_button.click()
        await verdict
        return visible

    assert qt_loop(scenario()) is False


@pytest.mark.parametrize(("text", "expected"), [
    ("yes", ("approved", False)), ("Yeah, do it.", ("approved", False)),
    ("yes, always", ("approved", True)), ("No.", ("declined", False)),
    ("don't", ("declined", False)), ("what does it do?", None),
])
def test_spoken_answers_are_understood(text, expected):
    assert spoken_answer(text) == expected
