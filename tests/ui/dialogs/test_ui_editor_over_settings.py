"""Settings → Personality → Edit… opens the personality editor in front of Settings, where it
can be typed into at once (issue 55); from the menu it opens beside her window as before."""

from __future__ import annotations

from app_support import app_config
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QPushButton
from ui_loop import qt_loop_fixture  # noqa: F401 (fixture)


def _edit_button(settings) -> QPushButton:
    return next(button for button in settings.personality.findChildren(QPushButton) if button.text() == "Edit…")


def test_the_personality_editor_opened_from_settings_comes_in_front_of_it_and_takes_typing(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    app = make_app(app_config(tmp_path, scripted_brain.url))
    qt_loop(app.start(), timeout=40)
    app.open_settings("personality")
    settings = app.settings_dialog
    qtbot.waitExposed(settings)
    assert QApplication.activeModalWidget() is settings

    qtbot.mouseClick(_edit_button(settings), Qt.MouseButton.LeftButton)
    editor = app.dialogs.editor
    qtbot.waitExposed(editor)
    assert QApplication.activeModalWidget() is editor  # in front of Settings, not under it
    qtbot.waitUntil(editor.isActiveWindow, timeout=3000)
    qtbot.keyClicks(editor.editor, "new line")
    assert "new line" in editor.text()

    editor.editor.setPlainText(editor.text().replace("new line", ""))
    editor.close()
    qtbot.waitUntil(lambda: QApplication.activeModalWidget() is settings, timeout=3000)  # Settings goes on
    settings.reject()
    with qtbot.waitSignal(settings.destroyed, timeout=3000):
        settings.deleteLater()  # a later Settings replaces it: the editor lives on

    app.open_personality_editor()  # the menu's Edit personality…: the same editor, beside her window
    assert app.dialogs.editor is editor and editor.isVisible()
    assert editor.parentWidget() is app.window and editor.windowModality() == Qt.WindowModality.NonModal
    assert QApplication.activeModalWidget() is None
