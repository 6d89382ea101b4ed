"""Settings as a new user reads them (issue 55), in her theme: every Toolsets column heading
is whole, and how to switch a family off is said above the list; the Voice tab says what Speed
1.00 means for her personality, and follows another personality chosen before Save."""

from __future__ import annotations

import pytest

from companion.config import Paths, Settings
from companion.paths import resource_dir
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


def _templates() -> dict:
    shipped = resource_dir("personality")
    return {"default": shipped / "default.md", "gremlin": shipped / "gremlin.md", "butler": shipped / "butler.md"}


def test_the_voice_tab_says_that_1_00_keeps_her_personalitys_own_pace(qtbot, tmp_path):
    dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), Settings()), Registry(),
                            templates=_templates(), her_name="Jeeves", her_speed=0.9)
    qtbot.addWidget(dialog)
    assert dialog.voice.speed.value() == 1.0
    assert dialog.voice.speed_note.text() == "1.00 keeps Jeeves's own pace (0.90)."
    dialog.voice.speed.setValue(1.3)
    assert "in place of Jeeves's own (0.90)" in dialog.voice.speed_note.text()


def test_choosing_another_personality_changes_what_the_voice_tab_says_before_save(qtbot, tmp_path):
    paths = Paths.default(tmp_path)
    dialog = SettingsDialog(SettingsKeeper(paths, Settings()), Registry(), templates=_templates(),
                            her_name="Mira", her_speed=None)
    qtbot.addWidget(dialog)
    assert "“Mira, …”" in dialog.voice.listening.name_wakes.text()
    tab = dialog.personality
    tab.template.setCurrentIndex(tab.template.findData("gremlin"))
    tab.use_template()  # "Use this template", not saved yet
    assert "“Pip, …”" in dialog.voice.listening.name_wakes.text()
    assert dialog.voice.speed_note.text() == "1.00 keeps Pip's own pace (1.15)."
    assert not (paths.config_dir / "personality-gremlin.md").exists()  # nothing written before Save
