"""Window details from an afternoon with her (issue 55), in her theme as the app shows them: a
running job shows in the pill row at any width; a card's answer buttons keep their gaps; a
reply cut short says so where it stops."""

from __future__ import annotations

import shutil

import pytest
from app_support import app_config, type_into
from PySide6.QtCore import Qt
from ui_loop import qt_loop_fixture, signal_future  # noqa: F401 (fixture)

from companion import events as ev
from companion.paths import resource_dir
from companion.ui.bridge import EventBridge
from companion.ui.theme import apply_theme
from companion.ui.window import CompanionWindow, text_room


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


@pytest.mark.parametrize("how", ["Stop", "a new question"])
def test_a_reply_stopped_by_the_user_ends_with_a_mark_not_mid_sentence(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop, how):
    story = "Once upon a time a small robot found a garden, and every morning it watered the roses."
    scripted_brain.push({"text": f"[happy] {story}", "chunks": 12, "chunk_delay": 0.3},
                        {"text": "[happy] Sunny."})
    app = make_app(app_config(tmp_path, scripted_brain.url))
    window = app.window

    async def scenario():
        await app.start()
        first_words = signal_future(app.bridge.reply_delta)
        stopped = signal_future(app.bridge.turn_finished)
        type_into(qtbot, app, "tell me a story")
        await first_words
        if how == "Stop":
            qtbot.mouseClick(window.stop_button, Qt.MouseButton.LeftButton)  # as Esc does
        else:
            type_into(qtbot, app, "what's the weather?")
        interrupted = (await stopped)[2]
        while "Sunny." not in window.captions.toPlainText() and how != "Stop":
            await signal_future(app.bridge.turn_finished)
        return interrupted

    assert qt_loop(scenario(), timeout=40)
    shown = window.captions.toPlainText()
    said = shown[shown.index("tell me a story") + len("tell me a story"):].split("what's the weather?")[0].strip()
    assert said and story not in said  # cut short
    assert said.endswith("(stopped)") and (said[:-len("(stopped)")].rstrip()[-1] in ".!?…")


def test_her_window_shows_the_chosen_personalitys_face_from_the_first_frame(qtbot, tmp_path, scripted_brain, make_app):
    config = app_config(tmp_path, scripted_brain.url)
    config.paths.config_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(resource_dir("personality") / "gremlin.md", config.paths.personality_file)  # face: pip
    app = make_app(config)  # not started: the core has not read the file yet
    with qtbot.waitSignal(app.window.face.painted, timeout=3000):
        pass  # her first frame
    assert app.window.face.last_frame.character.name == "pip"  # Mira showed for half a second first


@pytest.mark.parametrize("width", [300, 360, 460])
def test_the_text_boxs_hint_is_never_cut_however_narrow_the_window(qtbot, width):
    window, _bridge, _bus = _window(qtbot, width)
    window.set_voice("ready")
    box = window.text_box
    shown = box.placeholderText()
    qtbot.waitUntil(lambda: box.fontMetrics().horizontalAdvance(box.placeholderText()) <= text_room(box),
                    timeout=3000)
    assert shown.startswith("Type")
    assert box.toolTip() == "Type to her, or hold F9 to talk"  # the whole hint, on hover
    if width == 460:
        assert box.placeholderText() == "Type to her, or hold F9 to talk"


def test_in_the_smallest_window_an_open_cards_answer_buttons_are_in_sight_and_the_window_keeps_its_size(qtbot):
    window, _bridge, _bus = _window(qtbot, 298)
    window.resize(298, 542)  # the smallest her window was seen at on a desktop
    qtbot.waitUntil(lambda: window.height() == 542, timeout=3000)
    card = window.approvals.add_request(ev.ApprovalNeeded(  # the card in the README's picture
        "r1", "git push origin main", "I need your OK because git is not on the read-only list.", False, 180.0,
        access="write", once_only="git push can change the repository or run code from its settings "
                                  "(an alias, a hook, a filter), so I can only allow it once."))
    view = window.approvals._scroll.viewport()

    def in_sight(widget) -> bool:
        top = widget.mapTo(view, widget.rect().topLeft()).y()
        return top >= 0 and top + widget.height() <= view.height()

    buttons = [button for button in (card.approve_button, card.always_button, card.decline_button)
               if not button.isHidden()]
    qtbot.waitUntil(lambda: card.isVisible() and all(in_sight(button) for button in buttons), timeout=3000)
    assert in_sight(card.command_label)  # what she asks to run, above them
    assert window.size().toTuple() == (298, 542)  # room came from the transcript, not the screen
