"""Settings as a new user meets it in an afternoon: the wheel scrolls, labels say her name,
descriptions are whole and the Approvals tab tells the truth."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from app_support import app_config
from PySide6.QtCore import QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QLabel, QScrollArea
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.config import Paths, Settings
from companion.safety.grants import Grants
from companion.tools.registry import Registry, builtin_modules
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper

PERSONALITY = Path(__file__).resolve().parents[3] / "personality"


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _dialog(qtbot, tmp_path, **kwargs) -> SettingsDialog:
    registry = Registry()
    registry.register_modules(builtin_modules())
    keeper = SettingsKeeper(Paths.default(tmp_path), Settings())
    dialog = SettingsDialog(keeper, registry, **kwargs)
    qtbot.addWidget(dialog)
    return dialog


def _wheel(widget, steps: int = -1) -> None:
    """One notch of the mouse wheel over the middle of `widget` (down for negative steps)."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(widget.rect().center())), QPoint(0, 0),
                        QPoint(0, 120 * steps), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_the_wheel_over_a_spin_box_or_combo_scrolls_the_voice_page_and_changes_nothing(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path)
    dialog.resize(620, 360)
    dialog.show()
    dialog.show_tab("voice")
    qtbot.waitExposed(dialog)
    scroll = dialog.voice.findChild(QScrollArea)
    bar = scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    follow_up, mode = dialog.voice.listening.follow_up, dialog.voice.listening.mode
    before = (follow_up.value(), mode.currentIndex(), dialog.voice.speed.value())

    for widget in (follow_up, mode, dialog.voice.speed):
        _wheel(widget)

    assert (follow_up.value(), mode.currentIndex(), dialog.voice.speed.value()) == before
    assert bar.value() > 0  # the page moved instead
    assert dialog.edited().voice == dialog.keeper.settings.voice


def test_a_spin_box_clicked_into_still_takes_the_wheel(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path)
    dialog.show()
    dialog.show_tab("voice")
    qtbot.waitExposed(dialog)
    speed = dialog.voice.speed
    speed.setFocus()
    qtbot.waitUntil(speed.hasFocus)
    before = speed.value()
    _wheel(speed, steps=1)
    assert speed.value() == pytest.approx(before + speed.singleStep())


def test_the_voice_tab_says_the_current_personalitys_name_not_miras(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    config = app_config(tmp_path, scripted_brain.url)
    config = replace(config, settings=replace(config.settings, personality=str(PERSONALITY / "gremlin.md")))
    app = make_app(config)
    qt_loop(app.start())
    app.open_settings("voice")
    label = app.settings_dialog.voice.listening.name_wakes.text()
    assert "Pip" in label and "Mira" not in label


def _shown_lines(tree, item, column: int) -> tuple[int, int]:
    """(lines the cell's text needs at its width, lines its row has room for)."""
    index = tree.indexFromItem(item, column)
    rect = tree.visualRect(index)
    metrics = tree.fontMetrics()
    needed = metrics.boundingRect(QRect(0, 0, rect.width() - 8, 100_000), int(Qt.TextFlag.TextWordWrap),
                                  item.text(column)).height() // metrics.lineSpacing()
    return needed, rect.height() // metrics.lineSpacing()


@pytest.mark.parametrize("width", [620, 1200])
def test_every_toolset_description_is_shown_whole_at_the_dialogs_width(qtbot, tmp_path, width):
    dialog = _dialog(qtbot, tmp_path)
    dialog.resize(width, 700)
    dialog.show()
    dialog.show_tab("toolsets")
    qtbot.waitExposed(dialog)
    tree = dialog.toolsets
    tools = [tree.families[f].child(n) for f in tree.families for n in range(tree.families[f].childCount())]
    if width == 620:
        assert any(_shown_lines(tree, item, 1)[0] > 1 for item in tools)  # some must wrap
    qtbot.waitUntil(lambda: all(needed <= room for needed, room in (_shown_lines(tree, item, 1) for item in tools)))


def test_web_tools_say_they_use_the_internet_and_reminder_only_looks(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path)
    tree = dialog.toolsets
    risks = {tree.families[f].child(n).text(0): tree.families[f].child(n).text(2)
             for f in tree.families for n in range(tree.families[f].childCount())}
    assert "internet" in risks["web_search"] and "internet" in risks["web_extract"]
    assert risks["reminder"] == "only looks"
    assert risks["get_time"] == "only looks"


def test_the_approvals_tab_with_nothing_saved_says_plain_commands_run_without_asking(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path, grants=Grants())
    texts = " ".join(label.text() for label in dialog.approvals.findChildren(QLabel))
    assert "asks before running any command" not in texts
    assert "Nothing saved" in texts and "(ls, cat, grep, mkdir" in texts
