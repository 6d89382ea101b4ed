"""Settings load from TOML, save atomically, and a broken file never stops her."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.config import (
    BrainSettings,
    Paths,
    Settings,
    load_settings,
    save_settings,
    settings_from_dict,
    with_overrides,
)


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths.default(tmp_path / "config")


def test_a_missing_settings_file_gives_the_defaults_without_a_notice(paths):
    loaded = load_settings(paths)
    assert loaded.settings == Settings()
    assert loaded.notice is None


def test_saved_settings_load_back_equal(paths):
    settings = with_overrides(
        Settings(),
        brain={"model": "llama3.2:3b"},
        tools={"disabled_toolsets": ("web", "terminal")},
        voice={"speed": 1.25},
    )
    save_settings(paths, settings)
    assert load_settings(paths).settings == settings


def test_a_broken_settings_file_is_set_aside_and_defaults_are_used(paths):
    paths.config_dir.mkdir(parents=True)
    paths.settings_file.write_text("[brain\nmodel = ", encoding="utf-8")
    loaded = load_settings(paths)
    assert loaded.settings == Settings()
    assert "set it aside" in loaded.notice
    backups = list(paths.config_dir.glob("settings.broken-*.toml"))
    assert len(backups) == 1
    assert backups[0].read_text(encoding="utf-8") == "[brain\nmodel = "


def test_a_wrongly_typed_setting_is_named_in_the_notice(paths):
    paths.config_dir.mkdir(parents=True)
    paths.settings_file.write_text('[voice]\nspeed = "fast"\n', encoding="utf-8")
    loaded = load_settings(paths)
    assert "voice.speed" in loaded.notice
    assert loaded.settings.voice.speed == 1.0


def test_an_unknown_setting_is_refused_by_name():
    with pytest.raises(ValueError, match="brain.colour"):
        settings_from_dict({"brain": {"colour": "blue"}})


def test_a_brain_url_without_a_scheme_is_refused():
    with pytest.raises(ValueError, match="http"):
        BrainSettings(base_url="localhost:11434")


def test_saving_leaves_no_temporary_files_behind(paths):
    save_settings(paths, Settings())
    save_settings(paths, Settings())
    assert sorted(p.name for p in paths.config_dir.iterdir()) == ["settings.toml"]
