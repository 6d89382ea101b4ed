"""The window's look: one night-lavender palette for every widget, menu, popup list and dialog.

The palette is applied twice from the same colours: as the application's QPalette (under the
Fusion style, which honours it whatever the desktop's light or dark theme says) so that menus,
popup lists, tooltips and scroll areas no one styled still match, and as a style sheet for
shapes (rounded pills, cards, banners). `apply_theme(app)` does both.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from companion.paths import resource_dir

ART = resource_dir("assets").joinpath("theme").as_posix()
"""The arrows and the check mark the style sheet draws with (SVG, in the palette's colours)."""

WINDOW = "#2f3454"
"""The window and dialog background."""
SURFACE = "#3c4170"
"""Raised things on the window: tabs, cards, the pill, headers, menus."""
BASE = "#1f2238"
"""Where the user types or picks: text boxes, lists, trees, popup lists."""
BUTTON = "#4b4372"
HOVER = "#5d5390"
BORDER = "#8d86b8"
"""Borders of inputs and check boxes: visible against WINDOW and BASE."""
TEXT = "#f3eefe"
SOFT_TEXT = "#c9c2e6"
"""Placeholders and secondary text (still ≥ 4.5:1 on BASE and WINDOW)."""
DISABLED_TEXT = "#8d88a8"
HIGHLIGHT = "#5f55a8"
ACCENT = "#ffc66b"
"""Approval cards and the work chip: needs her user's attention."""
ON_ACCENT = "#3a2c3f"
ERROR_TEXT = "#ffb3b3"
PILL = {
    "ok": SURFACE, "busy": BUTTON, "listening": "#2f5a7a", "attention": ACCENT,
    "offline": "#7a2f45", "muted": "#4a4a5e",
}
"""The state pill's background by kind (presence.Look.kind)."""


def palette() -> QPalette:
    """The one palette, for every colour group (active, inactive; disabled greys the text)."""
    p = QPalette()
    roles = QPalette.ColorRole
    colours = {
        roles.Window: WINDOW, roles.WindowText: TEXT, roles.Base: BASE, roles.AlternateBase: SURFACE,
        roles.ToolTipBase: SURFACE, roles.ToolTipText: TEXT, roles.PlaceholderText: SOFT_TEXT,
        roles.Text: TEXT, roles.Button: BUTTON, roles.ButtonText: TEXT, roles.BrightText: ERROR_TEXT,
        roles.Light: HOVER, roles.Midlight: BUTTON, roles.Mid: BORDER, roles.Dark: BASE,
        roles.Shadow: "#15172a", roles.Highlight: HIGHLIGHT, roles.HighlightedText: "#ffffff",
        roles.Link: ACCENT, roles.LinkVisited: "#e6a95a",
    }
    for role, colour in colours.items():
        p.setColor(role, QColor(colour))
    for role in (roles.WindowText, roles.Text, roles.ButtonText, roles.PlaceholderText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(DISABLED_TEXT))
    return p


STYLE_SHEET = f"""
QMainWindow, QDialog {{ background: {WINDOW}; color: {TEXT}; }}
QWidget {{ color: {TEXT}; font-size: 10.5pt; }}
QToolTip {{ background: {SURFACE}; color: {TEXT}; border: 1px solid {BORDER}; }}
QLabel#statePill {{ background: {PILL["ok"]}; border-radius: 10px; padding: 3px 10px; }}
QLabel#statePill[kind="busy"] {{ background: {PILL["busy"]}; }}
QLabel#statePill[kind="listening"] {{ background: {PILL["listening"]}; }}
QLabel#statePill[kind="attention"] {{ background: {PILL["attention"]}; color: {ON_ACCENT}; }}
QLabel#statePill[kind="offline"] {{ background: {PILL["offline"]}; }}
QLabel#statePill[kind="muted"] {{ background: {PILL["muted"]}; }}
QLabel#workChip {{ background: {ACCENT}; color: {ON_ACCENT}; border-radius: 10px; padding: 3px 10px; }}
QLabel#settingsError, QLabel#problem {{ color: {ERROR_TEXT}; }}
QLabel#hint, QLabel#approvalHint {{ color: {SOFT_TEXT}; }}
QFrame#banner_error {{ background: #7a2f45; border-radius: 8px; }}
QFrame#banner_warning {{ background: #6e5128; border-radius: 8px; }}
QFrame#banner_info {{ background: #2f5a7a; border-radius: 8px; }}
QFrame#approvalCard {{ background: {SURFACE}; border: 2px solid {ACCENT}; border-radius: 10px; }}
QPlainTextEdit#approvalCommand {{ background: {BASE}; border: none; border-radius: 6px; }}
QPushButton[defaultChoice="true"] {{ border: 2px solid {ACCENT}; }}
QLineEdit, QPlainTextEdit, QTextEdit, QComboBox, QDoubleSpinBox, QSpinBox, QKeySequenceEdit {{
    background: {BASE}; color: {TEXT}; border: 1px solid {BORDER}; border-radius: 6px; padding: 4px;
    placeholder-text-color: {SOFT_TEXT}; }}
QComboBox QAbstractItemView {{ background: {BASE}; color: {TEXT}; selection-background-color: {HIGHLIGHT};
    border: 1px solid {BORDER}; }}
QSpinBox::up-button, QSpinBox::down-button, QDoubleSpinBox::up-button, QDoubleSpinBox::down-button {{
    background: {BUTTON}; width: 16px; border: none; }}
QSpinBox::up-arrow, QDoubleSpinBox::up-arrow, QComboBox::down-arrow:on {{ image: url({ART}/arrow-up.svg);
    width: 10px; height: 6px; }}
QSpinBox::down-arrow, QDoubleSpinBox::down-arrow, QComboBox::down-arrow {{ image: url({ART}/arrow-down.svg);
    width: 10px; height: 6px; }}
QComboBox::drop-down {{ border: none; width: 20px; }}
QPushButton, QToolButton {{ background: {BUTTON}; color: {TEXT}; border: none; border-radius: 6px;
                           padding: 5px 12px; }}
QPushButton:hover, QToolButton:hover {{ background: {HOVER}; }}
QPushButton:checked {{ background: #a0435f; }}
QPushButton:disabled, QToolButton:disabled {{ color: {DISABLED_TEXT}; }}
QMenu {{ background: {SURFACE}; color: {TEXT}; border: 1px solid {BORDER}; padding: 4px; }}
QMenu::item {{ padding: 5px 24px 5px 12px; }}
QMenu::item:selected {{ background: {HIGHLIGHT}; color: #ffffff; }}
QMenu::separator {{ height: 1px; background: {BORDER}; margin: 4px 8px; }}
QTabWidget::pane {{ border: 1px solid {BUTTON}; }}
QTabBar::tab {{ background: {SURFACE}; color: {TEXT}; padding: 6px 12px; }}
QTabBar::tab:selected {{ background: {HOVER}; }}
QListWidget, QTreeWidget, QListView, QTreeView, QTableView {{ background: {BASE}; color: {TEXT};
    alternate-background-color: {SURFACE}; }}
QHeaderView::section {{ background: {SURFACE}; color: {TEXT}; border: none; padding: 4px 8px; }}
QCheckBox::indicator, QTreeView::indicator {{ width: 15px; height: 15px; border: 1px solid {BORDER};
    border-radius: 3px; background: {BASE}; }}
QCheckBox::indicator:checked, QTreeView::indicator:checked {{ background: {ACCENT}; border-color: {ACCENT};
    image: url({ART}/check.svg); }}
QScrollArea {{ background: {WINDOW}; border: none; }}
QScrollArea > QWidget > QWidget {{ background: {WINDOW}; }}
QScrollBar:vertical {{ background: #262a44; width: 10px; margin: 0; }}
QScrollBar::handle:vertical {{ background: {HOVER}; border-radius: 5px; min-height: 24px; }}
QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical {{ height: 0; }}
QScrollBar::add-page:vertical, QScrollBar::sub-page:vertical {{ background: none; }}
QSplitter::handle {{ background: {WINDOW}; }}
QProgressBar {{ background: {BASE}; color: {TEXT}; border: 1px solid {BORDER}; border-radius: 4px;
    text-align: center; }}
QProgressBar::chunk {{ background: {HIGHLIGHT}; }}
"""


def apply_theme(app: QApplication) -> None:
    """Her look on `app`, whatever the desktop's theme: Fusion, the palette, the style sheet."""
    app.setStyle("Fusion")  # the platform's style may ignore the palette (GTK, macOS)
    app.setPalette(palette())
    app.setStyleSheet(STYLE_SHEET)
