"""Settings load from TOML, save atomically, and a broken file never stops her."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.config import BrainSettings, Paths, Settings, with_overrides
from companion.settings_file import load_settings, save_settings, settings_from_dict


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


def test_fresh_settings_listen_when_called(paths):
    """The default is When called: on open speakers a TV or a call in the room starts nothing."""
    assert Settings().voice.listening == "called" and Settings().voice.mode == "called"
    assert load_settings(paths).settings.voice.mode == "called"  # no settings file yet


def test_an_old_settings_file_with_muted_false_and_no_listening_key_now_means_when_called(paths):
    paths.config_dir.mkdir(parents=True)
    paths.settings_file.write_text('[voice]\nmuted = false\nspeed = 1.1\n', encoding="utf-8")
    loaded = load_settings(paths)
    assert loaded.notice is None
    assert loaded.settings.voice.mode == "called" and loaded.settings.voice.speed == 1.1
    # Muted in an old file stays muted; unmuting comes back to When called.
    paths.settings_file.write_text('[voice]\nmuted = true\n', encoding="utf-8")
    voice = load_settings(paths).settings.voice
    assert voice.mode == "muted" and voice.with_mode("called").mode == "called" and voice.listening == "called"


@pytest.mark.parametrize(("saved", "mode"), [("always", "always"), ("called", "called"), ("muted", "muted")])
def test_a_file_that_names_a_listening_mode_keeps_it(paths, saved, mode):
    paths.config_dir.mkdir(parents=True)
    paths.settings_file.write_text(f'[voice]\nlistening = "{saved}"\n', encoding="utf-8")
    assert load_settings(paths).settings.voice.mode == mode


def test_saved_settings_name_the_listening_mode_so_a_later_default_never_changes_it(paths):
    save_settings(paths, with_overrides(Settings(), voice={"listening": "always"}))
    assert 'listening = "always"' in paths.settings_file.read_text(encoding="utf-8")
    save_settings(paths, Settings())
    assert 'listening = "called"' in paths.settings_file.read_text(encoding="utf-8")
