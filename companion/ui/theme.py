"""The window's look: one style sheet in the face's night-lavender palette."""

STYLE_SHEET = """
QMainWindow, QDialog { background: #2f3454; color: #f3eefe; }
QWidget { color: #f3eefe; font-size: 10.5pt; }
QLabel#statePill { background: #3c4170; border-radius: 10px; padding: 3px 10px; }
QLabel#workChip { background: #ffc66b; color: #3a2c3f; border-radius: 10px; padding: 3px 10px; }
QFrame#banner_error { background: #7a2f45; border-radius: 8px; }
QFrame#banner_warning { background: #7a5a2f; border-radius: 8px; }
QFrame#banner_info { background: #2f5a7a; border-radius: 8px; }
QFrame#approvalCard { background: #3c4170; border: 2px solid #ffc66b; border-radius: 10px; }
QLabel#approvalCommand { font-family: monospace; background: #1f2238; padding: 6px;
                         border-radius: 6px; }
QLineEdit, QPlainTextEdit, QComboBox, QDoubleSpinBox, QSpinBox {
    background: #1f2238; border: 1px solid #4b4372; border-radius: 6px; padding: 4px; }
QPushButton, QToolButton { background: #4b4372; border: none; border-radius: 6px;
                           padding: 5px 12px; }
QPushButton:hover, QToolButton:hover { background: #5d5390; }
QPushButton:checked { background: #a0435f; }
QPushButton:disabled { color: #8d88a8; }
QTabWidget::pane { border: 1px solid #4b4372; }
QTabBar::tab { background: #3c4170; padding: 6px 12px; }
QTabBar::tab:selected { background: #5d5390; }
QListWidget, QTreeWidget { background: #1f2238; }
QHeaderView::section { background: #3c4170; color: #f3eefe; border: none; padding: 4px 8px; }
QCheckBox::indicator, QTreeView::indicator { width: 15px; height: 15px; }
QScrollBar:vertical { background: #262a44; width: 10px; margin: 0; }
QScrollBar::handle:vertical { background: #5d5390; border-radius: 5px; min-height: 24px; }
QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical { height: 0; }
QScrollBar::add-page:vertical, QScrollBar::sub-page:vertical { background: none; }
QSplitter::handle { background: #2f3454; }
"""
