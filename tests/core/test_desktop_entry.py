"""`companion install-desktop` writes a valid launcher, her icon at the standard sizes and (when
chosen) autostart, one entry per profile; --uninstall removes them (of autostart, its own) and
unticks "start at login"; Settings' "start at login" writes or removes autostart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtGui import QImage

from companion.config import Paths
from companion.desktop_entry import ICON_SIZES, Places, entry_text
from companion.settings_file import load_settings


def _cli(home: Path, *args: str, profile: str = "config") -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": "", "XDG_CONFIG_HOME": ""}
    env.pop("DISPLAY", None)  # icons are painted without a screen
    return subprocess.run([sys.executable, "-m", "companion.cli", "--config-dir", str(home / profile),
                           "install-desktop", *args], env=env, capture_output=True, text=True, timeout=120)


def _places(home: Path, profile: str = "config") -> Places:
    return Places.for_user({"HOME": str(home)}, config_dir=home / profile)


def test_install_desktop_writes_a_valid_entry_and_her_icon_at_every_standard_size(tmp_path):
    done = _cli(tmp_path)
    assert done.returncode == 0, done.stderr
    places = _places(tmp_path)
    valid = subprocess.run(["desktop-file-validate", str(places.entry)], capture_output=True, text=True)
    assert valid.returncode == 0 and valid.stdout == "", valid.stdout
    text = places.entry.read_text()
    assert "Icon=companion\n" in text and "Name=Companion (config)\n" in text  # not the default profile
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    program, *args = exec_line.removeprefix("Exec=").split(" ")
    assert Path(program).is_file() and os.access(program, os.X_OK)
    assert args == ["--config-dir", str((tmp_path / "config").resolve())]
    for size in ICON_SIZES:
        icon = QImage(str(places.icon(size)))
        assert (icon.width(), icon.height()) == (size, size)
        assert icon.pixelColor(0, 0).alpha() == 0 and icon.pixelColor(size // 2, size // 2).alpha() == 255
    assert not places.autostart_entry.exists()
    assert "Start at login: no" in done.stdout


def test_autostart_is_written_when_asked_and_remembered_and_uninstall_removes_everything(tmp_path):
    assert _cli(tmp_path, "--autostart").returncode == 0
    places = _places(tmp_path)
    assert "X-GNOME-Autostart-enabled=true" in places.autostart_entry.read_text()
    assert subprocess.run(["desktop-file-validate", str(places.autostart_entry)]).returncode == 0
    assert load_settings(Paths.default(tmp_path / "config")).settings.ui.start_at_login is True
    done = _cli(tmp_path, "--uninstall")
    assert done.returncode == 0 and "Removed 11 files" in done.stdout
    assert not places.entry.exists() and not places.autostart_entry.exists()
    assert not any(places.icon(size).exists() for size in ICON_SIZES)
    # Settings' "Start her when I log in" is unticked with it: nothing says she still starts.
    assert load_settings(Paths.default(tmp_path / "config")).settings.ui.start_at_login is False


def test_each_profile_has_its_own_autostart_entry_and_uninstall_removes_only_its_own(tmp_path):
    first, second = _places(tmp_path, "work"), _places(tmp_path, "home")
    assert first.autostart_entry != second.autostart_entry
    assert first.autostart_entry.parent == second.autostart_entry.parent
    assert _cli(tmp_path, "--autostart", profile="work").returncode == 0
    assert _cli(tmp_path, "--no-autostart", profile="home").returncode == 0  # was: removed work's
    assert first.autostart_entry.is_file() and not second.autostart_entry.exists()
    assert "--config-dir " + str((tmp_path / "work").resolve()) in first.autostart_entry.read_text()
    assert _cli(tmp_path, "--autostart", profile="home").returncode == 0
    assert first.autostart_entry.is_file() and second.autostart_entry.is_file()
    assert _cli(tmp_path, "--uninstall", profile="home").returncode == 0
    assert first.autostart_entry.is_file() and not second.autostart_entry.exists()
    assert load_settings(Paths.default(tmp_path / "work")).settings.ui.start_at_login is True


def test_each_profile_has_its_own_menu_entry_and_the_shared_icons_go_with_the_last_one(tmp_path):
    work, home = _places(tmp_path, "work"), _places(tmp_path, "home")
    assert _cli(tmp_path, profile="work").returncode == 0
    assert _cli(tmp_path, profile="home").returncode == 0  # was: rewrote work's launcher
    assert work.entry != home.entry and work.entry.is_file() and home.entry.is_file()
    assert "Name=Companion (work)\n" in work.entry.read_text()
    assert "--config-dir " + str((tmp_path / "work").resolve()) in work.entry.read_text()
    assert "--config-dir " + str((tmp_path / "home").resolve()) in home.entry.read_text()
    done = _cli(tmp_path, "--uninstall", profile="home")
    assert done.returncode == 0 and "Removed 1 file: this profile's launcher" in done.stdout, done.stdout
    assert work.entry.is_file() and all(work.icon(size).is_file() for size in ICON_SIZES)
    assert _cli(tmp_path, "--uninstall", profile="work").returncode == 0
    assert not work.entry.exists() and not any(work.icon(size).exists() for size in ICON_SIZES)


def test_the_default_profile_keeps_the_plain_autostart_name(tmp_path):
    from companion.desktop_entry import profile_id
    from companion.paths import default_config_dir

    assert Places.for_user({"HOME": str(tmp_path)}).autostart_entry.name == "companion.desktop"
    assert Places.for_user({"HOME": str(tmp_path)}, config_dir=default_config_dir()).profile == ""
    other = profile_id(tmp_path / "work")
    assert len(other) == 8 and other == profile_id(tmp_path / "x" / ".." / "work")  # by its full path
    assert _places(tmp_path, "work").autostart_entry.name == f"companion-{other}.desktop"


def test_arguments_with_spaces_and_percent_signs_are_quoted_as_the_spec_says(tmp_path):
    text = entry_text(["/opt/my apps/companion", "--config-dir", "/home/a/100% mine"])
    assert 'Exec="/opt/my apps/companion" --config-dir "/home/a/100%% mine"' in text
    path = tmp_path / "companion.desktop"
    path.write_text(text)
    assert subprocess.run(["desktop-file-validate", str(path)]).returncode == 0
