"""`companion install-desktop` writes a valid launcher, her icon at the standard sizes and (when
chosen) autostart; --uninstall removes them; Settings' "start at login" writes or removes autostart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtGui import QImage

from companion.config import Paths
from companion.desktop_entry import ICON_SIZES, Places, entry_text
from companion.settings_file import load_settings


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": "", "XDG_CONFIG_HOME": ""}
    env.pop("DISPLAY", None)  # icons are painted without a screen
    return subprocess.run([sys.executable, "-m", "companion.cli", "--config-dir", str(home / "config"),
                           "install-desktop", *args], env=env, capture_output=True, text=True, timeout=120)


def test_install_desktop_writes_a_valid_entry_and_her_icon_at_every_standard_size(tmp_path):
    done = _cli(tmp_path)
    assert done.returncode == 0, done.stderr
    places = Places.for_user({"HOME": str(tmp_path)})
    valid = subprocess.run(["desktop-file-validate", str(places.entry)], capture_output=True, text=True)
    assert valid.returncode == 0 and valid.stdout == "", valid.stdout
    text = places.entry.read_text()
    assert "Icon=companion\n" in text and "Name=Companion\n" in text
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
    places = Places.for_user({"HOME": str(tmp_path)})
    assert "X-GNOME-Autostart-enabled=true" in places.autostart_entry.read_text()
    assert subprocess.run(["desktop-file-validate", str(places.autostart_entry)]).returncode == 0
    assert load_settings(Paths.default(tmp_path / "config")).settings.ui.start_at_login is True
    done = _cli(tmp_path, "--uninstall")
    assert done.returncode == 0 and "Removed 11 files" in done.stdout
    assert not places.entry.exists() and not places.autostart_entry.exists()
    assert not any(places.icon(size).exists() for size in ICON_SIZES)


def test_arguments_with_spaces_and_percent_signs_are_quoted_as_the_spec_says(tmp_path):
    text = entry_text(["/opt/my apps/companion", "--config-dir", "/home/a/100% mine"])
    assert 'Exec="/opt/my apps/companion" --config-dir "/home/a/100%% mine"' in text
    path = tmp_path / "companion.desktop"
    path.write_text(text)
    assert subprocess.run(["desktop-file-validate", str(path)]).returncode == 0
