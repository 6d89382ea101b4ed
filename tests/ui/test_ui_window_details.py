"""Window details from an afternoon with her (issue 55), in her theme as the app shows them: a
running job shows in the pill row at any width; a card's answer buttons keep their gaps."""

from __future__ import annotations

import pytest

from companion import events as ev
from companion.ui.bridge import EventBridge
from companion.ui.theme import apply_theme
from companion.ui.window import CompanionWindow


@pytest.fixture(autouse=True)
def _her_theme(qapp):
    palette, sheet = qapp.palette(), qapp.styleSheet()
    apply_theme(qapp)  # as `companion.ui.launch` does: paddings and fonts change every size
    yield
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)


TASK = "read every note in the workspace and write a summary of the open questions"


def _window(qtbot, width: int) -> tuple[CompanionWindow, EventBridge, ev.EventBus]:
    window = CompanionWindow()
    qtbot.addWidget(window)
    bridge = EventBridge()
    bus = ev.EventBus()
    bridge.attach(bus)
    window.connect_bridge(bridge)
    window.resize(width, 720)
    window.show()
    qtbot.waitExposed(window)
    return window, bridge, bus


@pytest.mark.parametrize("width", [460, 900])
def test_a_running_job_shows_its_chip_in_the_pill_row_at_any_window_width(qtbot, width):
    window, bridge, bus = _window(qtbot, width)
    with qtbot.waitSignal(bridge.work_changed, timeout=2000):
        bus.emit(ev.WorkChanged("running", TASK))
    chip = window.work_chip
    words = chip.fontMetrics().horizontalAdvance
    qtbot.waitUntil(lambda: chip.isVisible() and chip.width() >= words("Working…"), timeout=2000)
    assert window.width() == width  # the chip never widens the window
    shown = chip.geometry()
    assert shown.right() < window.menu_button.geometry().left()  # whole, before the ☰ button
    assert chip.text().startswith("Working") and chip.toolTip() == TASK
    assert words(chip.text()) <= chip.contentsRect().width()  # its words fit inside it
    if width == 900:
        assert chip.text() == chip.full_text == "Working on: read every note in the work…"
    with qtbot.waitSignal(bridge.work_changed, timeout=2000):
        bus.emit(ev.WorkChanged("finished", TASK, "two questions are open"))
    assert not chip.isVisible()


@pytest.mark.parametrize("width", [420, 460, 600, 900])
def test_a_cards_answer_buttons_side_by_side_keep_the_same_gap_between_each_pair(qtbot, width):
    window, _bridge, _bus = _window(qtbot, width)
    card = window.approvals.add_request(ev.ApprovalNeeded(
        "r1", "git status --short", "May I check what changed?", True, 60.0, access="read"))
    buttons = (card.approve_button, card.always_button, card.decline_button)

    def gaps() -> list[int]:
        approve, always, decline = (button.geometry() for button in buttons)
        return [always.left() - approve.right() - 1, decline.left() - always.right() - 1]

    def side_by_side_apart() -> bool:  # once the card has laid its buttons out for this width
        return card.isVisible() and len({button.y() for button in buttons}) == 1 and gaps()[0] == gaps()[1] > 0

    # "Yes, approve once" and "Always allow" touched (or overlapped) where "No, decline" had a gap.
    qtbot.waitUntil(side_by_side_apart, timeout=3000)
    assert all(button.width() >= button.sizeHint().width() for button in buttons)
