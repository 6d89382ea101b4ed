"""The tray icon: show or hide her window, mute the microphone, choose the listening mode, quit."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMainWindow, QMenu, QSystemTrayIcon

from companion.ui.face.pictures import app_icon


class TrayIcon(QObject):
    """Only shown where the desktop has a tray; everything also lives in the window's menu."""

    quit_requested = Signal()
    mute_toggled = Signal(bool)
    mode_chosen = Signal(str)
    """A listening mode from the "Listening mode" submenu: always | called | muted."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self._window = window
        self.menu = QMenu()
        self.show_action = self.menu.addAction("Hide window", self.toggle_window)
        self.mute_action = QAction("Mute microphone", self.menu, checkable=True)
        self.mute_action.toggled.connect(self.mute_toggled.emit)
        self.menu.addAction(self.mute_action)
        self.listening_menu = self.menu.addMenu("Listening mode")
        self.mode_actions: dict[str, QAction] = {}
        modes = QActionGroup(self.listening_menu)
        for label, mode in (("Always answer", "always"), ("When called", "called"), ("Muted", "muted")):
            action = QAction(label, self.listening_menu, checkable=True)
            action.triggered.connect(lambda _checked, mode=mode: self.mode_chosen.emit(mode))
            modes.addAction(action)
            self.listening_menu.addAction(action)
            self.mode_actions[mode] = action
        self.menu.addSeparator()
        self.menu.addAction("Quit", self.quit_requested.emit)
        self.icon = QSystemTrayIcon(app_icon(), self)
        self.icon.setToolTip("Companion")
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)

    def show(self) -> None:
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.icon.show()

    def hide(self) -> None:
        self.icon.hide()

    def toggle_window(self) -> None:
        if self._window.isVisible():
            self._window.hide()
        else:
            self._window.show()
            self._window.raise_()
            self._window.activateWindow()
        self.show_action.setText("Hide window" if self._window.isVisible() else "Show window")

    def offer_voice(self, offered: bool) -> None:
        """Without her voice (--no-voice) there is no microphone to mute or mode to choose:
        the menu leaves both out, so they can't change saved settings or make her doze."""
        self.mute_action.setVisible(offered)
        self.listening_menu.menuAction().setVisible(offered)

    def show_mode(self, mode: str) -> None:
        """Tick the listening mode in use (set from Settings, the Mute button or this menu)."""
        action = self.mode_actions.get(mode)
        if action is not None and not action.isChecked():
            action.setChecked(True)

    def show_muted(self, muted: bool) -> None:
        if self.mute_action.isChecked() != muted:
            self.mute_action.setChecked(muted)

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.toggle_window()
