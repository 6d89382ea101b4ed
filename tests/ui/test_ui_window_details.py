"""Window details from an afternoon with her (issue 55): a running job shows in the pill row at
any width."""

from __future__ import annotations

import pytest

from companion import events as ev
from companion.ui.bridge import EventBridge
from companion.ui.window import CompanionWindow

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
