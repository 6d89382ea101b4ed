"""Every visible text in every dialog is readable (WCAG AA, 4.5:1), in light and dark desktops.

Measured on real renders (tests/helpers/contrast.py): each text is drawn, then removed, and the
pixels it changed are compared with the background actually behind them.
"""

from __future__ import annotations

import time

import pytest
from contrast import AA, measure
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion import events as ev
from companion.config import Paths, Settings
from companion.conversations.store import ConversationSummary
from companion.persona.store import PersonalityStore, shipped_templates
from companion.safety.grants import GrantStore
from companion.tools.registry import Registry, builtin_modules
from companion.ui.theme import apply_theme


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _dark_desktop() -> QPalette:
    p = QPalette()
    for role, colour in ((QPalette.ColorRole.Window, "#202020"), (QPalette.ColorRole.WindowText, "#f0f0f0"),
                         (QPalette.ColorRole.Base, "#181818"), (QPalette.ColorRole.Text, "#f0f0f0"),
                         (QPalette.ColorRole.Button, "#303030"), (QPalette.ColorRole.ButtonText, "#f0f0f0")):
        p.setColor(role, QColor(colour))
    return p


@pytest.fixture(params=["light desktop", "dark desktop"])
def themed(request, qapp):
    """The desktop's own palette first (light or dark), then her theme on top, as `run` does."""
    style, palette, sheet = qapp.style().name(), qapp.palette(), qapp.styleSheet()
    desktop = QStyleFactory.create("Fusion").standardPalette() if request.param == "light desktop" \
        else _dark_desktop()
    qapp.setPalette(desktop)
    apply_theme(qapp)
    yield qapp
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setStyle(style)


PILL_KINDS = (  # window facts that give each of the pill's colours
    {"core": "thinking"}, {"core": "idle", "push_to_talk": True}, {"push_to_talk": False, "waiting": True},
    {"waiting": False, "offline": "can't reach my brain"}, {"offline": "", "muted": True}, {"muted": False},
)


def _settle(qtbot, widget) -> None:
    widget.show()
    qtbot.waitExposed(widget)
    QApplication.processEvents()


def _faint(widget) -> list[str]:
    return [f"{m.where} {m.text!r}: {m.ratio:.2f}" for m in measure(widget) if m.ratio < AA]


def _measured(widget) -> int:
    return len(measure(widget))


@pytest.fixture
def registry() -> Registry:
    registry = Registry()
    registry.register_modules(builtin_modules())
    return registry


def test_the_window_its_pill_cards_banners_and_menu_are_readable(themed, qtbot):
    from companion.ui.window import CompanionWindow

    window = CompanionWindow()
    qtbot.addWidget(window)
    window.set_voice("ready")
    for kind in ("error", "warning", "info"):
        window.banners.show_banner(kind, f"A {kind} banner.", kind=kind, actions=[("Open Settings", lambda: None)])
    card = window.approvals.add_request(ev.ApprovalNeeded("r1", "git push origin main", "I need your OK.", True, 60))
    card._arm()
    window.show_work("running", "tidy the downloads folder", "")
    window.captions.add_heard("what time is it?", True)
    window.captions.add_reply_delta("It's **ten past three**.")
    window.captions.finish_reply("It's **ten past three**.")
    window.captions.add_notice("Declined `rm -r notes`")
    _settle(qtbot, window)
    problems = _faint(window)
    for facts in PILL_KINDS:  # the pill in every colour it can take
        window._update(**facts)
        problems += [p for p in _faint(window) if "statePill" in p]
    assert problems == []
    assert _measured(window) >= 12  # the check did look at the texts
    menu = window.menu_button.menu()
    menu.popup(window.mapToGlobal(window.rect().center()))
    qtbot.waitUntil(menu.isVisible)
    assert _faint(menu) == [] and _measured(menu) >= 5
    menu.close()


def test_every_settings_tab_and_its_popup_lists_are_readable(themed, qtbot, tmp_path, registry):
    from companion.ui.settings.dialog import SettingsDialog
    from companion.ui.settings.keeper import SettingsKeeper

    grants = GrantStore(tmp_path / "approvals.toml")
    grants.add_line("git status")
    keeper = SettingsKeeper(Paths.default(tmp_path), Settings())
    dialog = SettingsDialog(keeper, registry, grants=grants.current(), templates=shipped_templates(),
                            devices=[{"index": 0, "name": "Built-in microphone", "max_input_channels": 1, "max_output_channels": 0}])
    qtbot.addWidget(dialog)
    _settle(qtbot, dialog)
    problems = []
    for index in range(dialog.tabs.count()):
        dialog.tabs.setCurrentIndex(index)
        QApplication.processEvents()
        problems += [f"{dialog.tabs.tabText(index)}: {p}" for p in _faint(dialog)]
        for combo in dialog.tabs.currentWidget().findChildren(type(dialog.brain.model)):
            if not combo.isVisible() or combo.count() == 0:
                continue
            combo.showPopup()
            popup = combo.view().window()
            qtbot.waitUntil(popup.isVisible)
            problems += [f"{dialog.tabs.tabText(index)} list: {p}" for p in _faint(popup)]
            combo.hidePopup()
    assert problems == []


def test_the_personality_editor_is_readable(themed, qtbot, tmp_path, registry):
    from companion.ui.dialogs.personality_editor import PersonalityEditor

    store = PersonalityStore(tmp_path / "personality.md", known_tools=lambda: registry.tools().keys(),
                             copy_default=True)
    editor = PersonalityEditor(store, registry)
    qtbot.addWidget(editor)
    editor.editor.setPlainText(editor.text() + "\n## Tool voice patterns\n- broken: [\n")
    editor.check()
    _settle(qtbot, editor)
    assert _faint(editor) == [] and _measured(editor) >= 4


def test_the_conversations_and_notes_dialogs_are_readable(themed, qtbot, tmp_path):
    from companion.ui.dialogs.conversations import ConversationsDialog
    from companion.ui.dialogs.notes import NotesDialog

    now = time.time()
    talks = [ConversationSummary(1, "Planning the garden", now - 90, now - 60, 4),
             ConversationSummary(2, "", now - 30, now, 1)]
    conversations = ConversationsDialog(lambda _text: talks, current=2)
    qtbot.addWidget(conversations)
    _settle(qtbot, conversations)
    assert _faint(conversations) == [] and _measured(conversations) >= 3
    notes = NotesDialog(tmp_path / "data")
    qtbot.addWidget(notes)
    _settle(qtbot, notes)
    assert _faint(notes) == []
