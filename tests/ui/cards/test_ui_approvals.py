"""Approval cards against the real gate: approve, always, decline, keys, voice, and expiry."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion import events as ev
from companion.safety.consent.approval import CardApprover, Decision
from companion.safety.consent.visible import visible
from companion.safety.gate import build_gate
from companion.ui.bridge import EventBridge
from companion.ui.cards.approval_card import spoken_answer, typed_answer
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
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
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


async def _armed(card) -> None:
    """A card ignores keys and clicks for its first second: wait until it takes them."""
    if not card.is_armed():
        await signal_future(card.armed)


def _decisions(gate) -> list[str]:
    return [entry["decision"] for entry in gate.audit.entries()]


def test_approve_once_runs_it_and_saves_nothing(setup, qt_loop):
    window, bridge, _bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        card = window.approvals.cards[request.request_id]
        assert card.command_label.text() == COMMAND
        await _armed(card)
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
        card = window.approvals.cards[request.request_id]
        await _armed(card)
        card.always_button.click()
        return await verdict

    assert qt_loop(scenario()).allowed
    assert gate.grants.current().lines == (COMMAND,)


def test_escape_declines_the_open_card(setup, qtbot, qapp, qt_loop):
    window, bridge, _bus, gate = setup
    window.install_push_to_talk(qapp)

    async def scenario():
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        await _armed(window.approvals.cards[request.request_id])
        qtbot.keyClick(window.text_box, Qt.Key.Key_Escape)
        return await verdict

    verdict = qt_loop(scenario())
    assert not verdict.allowed and verdict.decision is Decision.DECLINED
    assert _decisions(gate) == ["declined"]


def test_a_spoken_yes_answers_the_card_through_the_gate(setup, qt_loop):
    from companion.safety.consent.answers import answer_aloud

    window, bridge, bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge, channel="voice")
        (request,) = await shown
        # What the voice loop does with a heard "yes": the safety layer answers, not the window.
        assert answer_aloud(gate, "Yes, go ahead.")
        resolved = signal_future(bridge.approval_resolved)
        result = await verdict
        await resolved
        return result, window.approvals.cards[request.request_id]

    verdict, card = qt_loop(scenario())
    assert verdict.allowed and card.outcome == "approved"


def test_a_heard_sentence_that_is_no_answer_leaves_the_card_open(setup, qt_loop):
    from companion.safety.consent.answers import answer_aloud

    _window, bridge, _bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge, channel="voice", timeout_s=0.5)
        await shown
        assert not answer_aloud(gate, "What does that command do?")
        return await verdict

    assert qt_loop(scenario()).decision is Decision.EXPIRED


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
        await _armed(card)
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


@pytest.mark.parametrize(("text", "expected"), [
    ("yes", ("approved", False)), ("Yes, always.", ("approved", True)), ("no, don't", ("declined", False)),
    ("yes and by the way", None), ("sure, what's that?", None), ("oh and by the way", None),
])
def test_a_typed_message_answers_only_when_it_is_nothing_but_an_answer(text, expected):
    assert typed_answer(text) == expected


def test_typing_a_sentence_while_a_card_appears_never_answers_it(setup, qtbot, qapp, qt_loop):
    window, bridge, _bus, gate = setup
    window.install_push_to_talk(qapp)
    window.text_box.setFocus()

    async def scenario():
        qtbot.keyClicks(window.text_box, "oh and b")
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        card = window.approvals.cards[request.request_id]
        qtbot.keyClicks(window.text_box, "y the way")  # the "y" lands just as the card appears
        await _armed(card)
        qtbot.keyClicks(window.text_box, ", yes a y n")  # and again once it takes clicks
        assert window.text_box.hasFocus()
        assert window.text_box.text() == "oh and by the way, yes a y n"
        assert not verdict.done() and card.outcome is None and not card._answered
        return verdict

    verdict = qt_loop(scenario())
    assert _decisions(gate) == []
    verdict.cancel()


def test_ctrl_enter_approves_only_once_armed_and_never_while_a_message_is_typed(setup, qtbot, qt_loop):
    window, bridge, _bus, gate = setup
    window.text_box.setFocus()
    ctrl = Qt.KeyboardModifier.ControlModifier

    async def scenario():
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        card = window.approvals.cards[request.request_id]
        qtbot.keyClick(window.text_box, Qt.Key.Key_Return, ctrl)  # too soon: ignored
        assert not card._answered
        await _armed(card)
        qtbot.keyClicks(window.text_box, "one more thing")
        qtbot.keyClick(window.text_box, Qt.Key.Key_Return, ctrl)  # "send", not an OK
        assert not card._answered
        window.text_box.clear()
        qtbot.keyClick(window.text_box, Qt.Key.Key_Return, ctrl)
        return await verdict

    assert qt_loop(scenario()).allowed
    assert gate.grants.current().lines == ()


def test_a_destructive_command_defaults_to_no_and_approves_only_by_click(setup, qtbot, qt_loop):
    window, bridge, _bus, gate = setup
    window.text_box.setFocus()
    ctrl = Qt.KeyboardModifier.ControlModifier

    async def scenario():
        verdict, shown = _ask(gate, bridge, command="rm -rf build")
        (request,) = await shown
        card = window.approvals.cards[request.request_id]
        await _armed(card)
        qtbot.keyClick(window.text_box, Qt.Key.Key_Return, ctrl)
        qtbot.keyClick(window.text_box, Qt.Key.Key_Return, ctrl | Qt.KeyboardModifier.ShiftModifier)
        assert not card._answered
        assert card.decline_button.property("defaultChoice") is True
        assert "Ctrl+Enter" not in card.hint.text() and "always" not in card.hint.text().lower()
        card.approve_button.click()
        return await verdict

    assert qt_loop(scenario()).allowed


def test_the_hint_names_only_the_shortcuts_the_card_has(setup, qt_loop):
    window, bridge, _bus, gate = setup

    async def scenario():
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        hint = window.approvals.cards[request.request_id].hint.text()
        verdict.cancel()
        return hint

    hint = qt_loop(scenario())
    assert "Ctrl+Enter: approve once" in hint and "Ctrl+Shift+Enter: always allow" in hint
    assert "Esc: decline" in hint and "Y /" not in hint


def test_after_a_decision_the_text_box_has_focus_and_the_transcript_keeps_a_line(setup, qt_loop):
    window, bridge, _bus, gate = setup
    window.send_button.setFocus()  # anywhere but the text box

    async def scenario():
        verdict, shown = _ask(gate, bridge)
        (request,) = await shown
        card = window.approvals.cards[request.request_id]
        await _armed(card)
        resolved = signal_future(bridge.approval_resolved)
        card.decline_button.click()
        await verdict
        await resolved

    qt_loop(scenario())
    assert window.text_box.hasFocus()
    assert ("notice", f"Declined `{COMMAND}`") in window.captions.entries()


def test_a_long_command_fits_the_current_width_and_never_resizes_the_window(setup, qtbot, qt_loop):
    window, bridge, _bus, gate = setup
    window.resize(360, 560)
    qtbot.waitUntil(lambda: window.size().width() == 360)
    before = window.size()
    command = "touch " + "a" * 300 + "\n" + "\n".join(f"echo line{i}" for i in range(12))

    async def scenario():
        verdict, shown = _ask(gate, bridge, command=command)
        (request,) = await shown
        card = window.approvals.cards[request.request_id]
        qtbot.waitUntil(lambda: card.isVisible() and card.command_label.height() > 0)
        verdict.cancel()
        return card

    card = qt_loop(scenario())
    assert window.size() == before
    # Exactly what would run, all of it, with its newlines spelled out (nothing pushed out of sight).
    assert card.command_label.text() == visible(command)
    assert card.geometry().right() <= window.centralWidget().width()
