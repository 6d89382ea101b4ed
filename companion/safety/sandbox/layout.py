"""The mounts a writable workspace gets on top of its bind: her folders can't be moved aside,
and a workspace that holds the home keeps the user's startup files as they are.

Every folder between the workspace and one of her hidden folders is bound onto itself (a
mount point can't be renamed), and in a workspace holding the home the home is bound
read-only but for its visible entries. Pure: it only looks at the folders and returns bwrap
options, in the order bwrap needs them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["writable_layout"]


def _home_settings_read_only(workspace: str, home: str) -> list[str]:
    """In a workspace that holds the home: the home read-only but for its visible entries.

    What the user runs later without asking lives in the home's hidden files and folders
    (~/.bashrc, ~/.profile, ~/.config/autostart, ~/.ssh/authorized_keys, ~/.gitconfig, her own
    folders' parents) or is created at its top (a ~/.bash_profile that bash would read instead
    of ~/.profile). So the home itself is bound read-only, and only its existing visible
    entries (Documents, projects, notes.txt) are bound writable again; a link among them stays
    read-only (what it points to outside is out of sight anyway)."""
    if home == "/" or not _under(home, [workspace]) or not os.path.isdir(home):
        return []
    args = ["--ro-bind", home, home]
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(home)):
            path = os.path.join(home, name)
            if not name.startswith(".") and not os.path.islink(path):
                args += ["--bind", path, path]
    return args


def _pinned_ancestors(workspace: str, hidden: Sequence[Path]) -> list[str]:
    """Each folder between the workspace and one of her hidden folders, shallowest first.

    Her folders are covered by mounts, but a writable command could rename a folder above one
    (`mv .config .config_old`) and make a new one where she looks at her next start. A mount
    point can't be renamed or removed, so each folder on the way is bound onto itself."""
    folders: list[str] = []
    for extra in hidden:
        text = os.path.realpath(extra)
        if not _under(text, [workspace]) or text == workspace:
            continue
        parts = Path(text).relative_to(workspace).parts[:-1]
        for depth in range(1, len(parts) + 1):
            folder = os.path.join(workspace, *parts[:depth])
            if os.path.isdir(folder) and not os.path.islink(folder) and folder not in folders:
                folders.append(folder)
    return sorted(folders, key=lambda folder: folder.count("/"))


def writable_layout(workspace: str, home: str, hidden: Sequence[Path]) -> list[str]:
    """The mounts a writable workspace gets on top of its bind, in the order bwrap needs them
    (a later bind of a folder covers every mount made under it before)."""
    pinned = _pinned_ancestors(workspace, hidden)
    settings = _home_settings_read_only(workspace, home)
    if not settings:
        return [arg for folder in pinned for arg in ("--bind", folder, folder)]
    before = [f for f in pinned if f != home and not _under(f, [home])]  # above the home, or beside it
    # Inside the home's hidden folders nothing can be renamed anyway: they are read-only.
    inside = [f for f in pinned if f != home and _under(f, [home])
              and not Path(f).relative_to(home).parts[0].startswith(".")]
    return [*(arg for folder in before for arg in ("--bind", folder, folder)), *settings,
            *(arg for folder in inside for arg in ("--bind", folder, folder))]


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)
