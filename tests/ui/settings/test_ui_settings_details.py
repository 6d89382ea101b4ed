"""Settings as a new user reads them (issue 55), in her theme: every Toolsets column heading
is whole, and how to switch a family off is said above the list."""

from __future__ import annotations

import pytest

from companion.config import Paths, Settings
from companion.tools.registry import Registry, builtin_modules
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.theme import apply_theme


@pytest.fixture(autouse=True)
def _her_theme(qapp):
    palette, sheet = qapp.palette(), qapp.styleSheet()
    apply_theme(qapp)  # as `companion.ui.launch` does
    yield
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)


def test_every_toolsets_column_heading_is_whole_and_the_switch_off_hint_is_above_the_list(qtbot, tmp_path):
    registry = Registry()
    registry.register_modules(builtin_modules())
    dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), Settings()), registry)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_tab("toolsets")
    header = dialog.toolsets.header()
    qtbot.waitUntil(lambda: dialog.toolsets.isVisible() and header.sectionSize(1) > 0, timeout=3000)
    for section in range(header.count()):
        heading = dialog.toolsets.headerItem().text(section)
        assert header.sectionSize(section) >= header.sectionSizeFromContents(section).width(), heading
    assert dialog.toolsets_hint.isVisible() and dialog.toolsets_hint.text().startswith("Untick a family")
