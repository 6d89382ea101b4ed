"""How her window is laid out: the pill row (state, Stop, a background job's chip, the ☰
menu), the face over the transcript, banners, approval cards and the text row."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QMenu, QSplitter, QToolButton, QVBoxLayout, QWidget


def build_menu(window) -> tuple[QToolButton, QAction]:
    """The ☰ button with its menu, and the menu's "Always on top" switch."""
    menu = QMenu(window)
    menu.addAction("New conversation", QKeySequence.StandardKey.New, window.new_conversation_requested.emit)
    menu.addAction("Conversations…", window.conversations_requested.emit)
    menu.addAction("Her notes…", window.notes_requested.emit)
    menu.addSeparator()
    menu.addAction("Settings…", lambda: window.settings_requested.emit(""))
    menu.addAction("Edit personality…", window.personality_requested.emit)
    on_top = QAction("Always on top", window, checkable=True)
    on_top.toggled.connect(window.set_always_on_top)
    menu.addAction(on_top)
    menu.addSeparator()
    menu.addAction("Quit", window.quit_requested.emit)
    button = QToolButton()
    button.setText("☰")
    button.setToolTip("Menu")
    button.setMenu(menu)
    button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    menu.aboutToHide.connect(window.focus_text_box)
    return button, on_top


def lay_out(window) -> None:
    """The pill row, the face over the transcript, banners, cards and the text row."""
    top = QHBoxLayout()
    top.addWidget(window.state_label)
    top.addWidget(window.stop_button)
    top.addWidget(window.work_chip)
    top.addStretch(1)
    top.addWidget(window.menu_button)
    splitter = QSplitter(Qt.Orientation.Vertical)
    splitter.addWidget(window.face)
    splitter.addWidget(window.captions)
    splitter.setStretchFactor(0, 3)
    splitter.setStretchFactor(1, 2)
    splitter.setChildrenCollapsible(False)
    splitter.setSizes([360, 280])
    window.captions.setMinimumHeight(140)  # window.CAPTIONS_MIN (less while a card is open)
    bottom = QHBoxLayout()
    bottom.addWidget(window.text_box, 1)
    bottom.addWidget(window.send_button)
    bottom.addWidget(window.mute_button)
    column = QVBoxLayout()
    column.setContentsMargins(8, 8, 8, 8)
    column.addLayout(top)
    column.addWidget(window.banners)
    column.addWidget(splitter, 1)
    column.addWidget(window.approvals)
    column.addLayout(bottom)
    central = QWidget()
    central.setLayout(column)
    window.setCentralWidget(central)
