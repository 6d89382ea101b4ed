"""Her launcher: a freedesktop .desktop entry in the applications menu, her icon at the standard
sizes, and (when chosen) the same entry in autostart, one of each per profile (config folder) so
that two profiles never rewrite or remove each other's; the icons are shared and go with the last
entry. No Qt here: the icons are drawn by a
`render(size, path)` the caller passes (the command renders her face). Menus watch the
applications folder themselves, so no cache tool is run: she starts no program outside the
sandbox's door."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from companion.paths import atomic_write_text, default_config_dir
from companion.safety.consent.visible import make_visible

APP_ID = "companion"
"""The entry's file name and icon name (companion.desktop, companion.png)."""
ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
"""The hicolor theme's usual app icon sizes."""


@dataclass(frozen=True)
class Places:
    applications: Path
    autostart: Path
    icons: Path
    """The hicolor theme folder (icons/hicolor)."""
    profile: str = ""
    """Whose entries these are: "" for the default config folder, else profile_id(folder)."""
    label: str = ""
    """The profile's folder name, which tells its menu entry from the default one's."""

    @classmethod
    def for_user(cls, environ: dict[str, str] | None = None, config_dir: Path | None = None) -> Places:
        """The user's folders (XDG), for the profile whose config folder is `config_dir` (None: the default)."""
        env = os.environ if environ is None else environ
        home = Path(env.get("HOME") or Path.home())
        data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
        config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        profile = profile_id(config_dir)
        label = Path(config_dir).expanduser().resolve().name if profile else ""
        return cls(data / "applications", config / "autostart", data / "icons" / "hicolor", profile, label)

    @property
    def _file_name(self) -> str:
        """companion.desktop for the default profile, companion-<profile>.desktop for another."""
        return f"{APP_ID}-{self.profile}.desktop" if self.profile else f"{APP_ID}.desktop"

    @property
    def entry(self) -> Path:
        return self.applications / self._file_name

    @property
    def autostart_entry(self) -> Path:
        return self.autostart / self._file_name

    @property
    def name(self) -> str:
        """The menu's name for her: "Companion", or "Companion (work)" for another profile."""
        return f"Companion ({self.label or self.profile})" if self.profile else "Companion"

    def other_entries(self) -> list[Path]:
        """Other profiles' menu entries (they still use the shared icons)."""
        mine = {f"{APP_ID}.desktop", *(p.name for p in self.applications.glob(f"{APP_ID}-*.desktop"))}
        return [self.applications / name for name in sorted(mine)
                if (self.applications / name).exists() and self.applications / name != self.entry]

    def icon(self, size: int) -> Path:
        return self.icons / f"{size}x{size}" / "apps" / f"{APP_ID}.png"


def profile_id(config_dir: Path | None) -> str:
    """"" for the default config folder (or None), else 8 hex digits of a hash of its full path."""
    if config_dir is None:
        return ""
    folder = Path(config_dir).expanduser().resolve()
    if folder == default_config_dir().expanduser().resolve():
        return ""
    return hashlib.sha256(str(folder).encode("utf-8")).hexdigest()[:8]


def launch_command(config_dir: Path | None = None) -> list[str]:
    """How the launcher starts her: the installed `companion` script, else this Python with -m."""
    beside = Path(sys.executable).parent / "companion"  # the script of the venv she runs from
    script = str(beside) if beside.is_file() else shutil.which("companion") or ""
    command = [script] if script else [sys.executable, "-m", "companion.cli"]
    if config_dir is not None:
        command += ["--config-dir", str(Path(config_dir).resolve())]
    return command


def launcher_refusal(command: list[str]) -> str | None:
    """Why a launcher for `command` must not be written (a sentence), or None.

    A .desktop file is lines of text: a line break (or any hidden character) in a path, say
    the settings folder's, would start a line of its own, such as a second Exec= that runs
    something else at every login."""
    for word in command:
        shown = make_visible(word)
        if shown.hidden:
            return (f"I can't write the launcher: the path {shown.text} has a control or hidden "
                    "character in it, which would change what the launcher runs. Use a folder "
                    "whose name has none.")
    return None


def entry_text(command: list[str], *, autostart: bool = False, name: str = "Companion") -> str:
    """The .desktop file (Desktop Entry Specification 1.4, which desktop-file-validate knows)."""
    exec_line = " ".join(_quote(arg) for arg in command)
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",
        f"Name={name}",
        "GenericName=Voice companion",
        "Comment=Talk to her: she listens, answers out loud and uses tools",
        f"Exec={exec_line}",
        f"TryExec={_quote(command[0])}",
        f"Icon={APP_ID}",
        "Terminal=false",
        "Categories=Utility;",
        "Keywords=assistant;voice;talk;chat;",
        "StartupNotify=true",
        f"StartupWMClass={APP_ID}",
    ]
    if autostart:
        lines.append("X-GNOME-Autostart-enabled=true")
    return "\n".join(lines) + "\n"


def _quote(arg: str) -> str:
    # The spec's quoting: double quotes around an argument with reserved characters, and
    # backslash before ", `, $ and \ inside them; '%' is doubled (field codes).
    arg = arg.replace("%", "%%")
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`'):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return f'"{escaped}"'


def install(places: Places, command: list[str], render: Callable[[int, Path], None], *,
            autostart: bool = False) -> list[Path]:
    """Write the icons, the entry and (or remove) the autostart entry; the files written."""
    written = []
    for size in ICON_SIZES:
        path = places.icon(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        render(size, path)
        written.append(path)
    atomic_write_text(places.entry, entry_text(command, name=places.name))
    written.append(places.entry)
    set_autostart(places, command, autostart)
    if autostart:
        written.append(places.autostart_entry)
    return written


def set_autostart(places: Places, command: list[str], on: bool) -> None:
    """Start her at login (an entry in the autostart folder), or not."""
    if on:
        atomic_write_text(places.autostart_entry, entry_text(command, autostart=True, name=places.name))
    else:
        places.autostart_entry.unlink(missing_ok=True)


def uninstall(places: Places) -> list[Path]:
    """Remove this profile's entries, and the icons unless another profile's entry still uses
    them; the files removed."""
    removed = []
    shared = () if places.other_entries() else tuple(places.icon(size) for size in ICON_SIZES)
    for path in (places.entry, places.autostart_entry, *shared):
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed

