"""Where the workspace's git repositories are: a bounded walk that both the gate (what git
reads) and the sandbox (what approved commands may not change) look through."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Found", "find"]

# Inside a repository only these hold other repositories (submodules, linked work trees).
_NESTED = ("modules", "worktrees")


@dataclass
class Found:
    """What a walk of the workspace found of git's."""

    repositories: list[Path] = field(default_factory=list)
    """Every folder holding a `HEAD` and a `config` (a repository's own folder)."""
    pointers: list[Path] = field(default_factory=list)
    """Every `.git` that is a file (`gitdir: …`, a submodule's or a linked work tree's) or a link."""
    unfinished: list[Path] = field(default_factory=list)
    """Every `.git` folder without its `HEAD` or its `config` (being made, or laid by hand)."""
    complete: bool = True
    """False when the walk stopped at its bound: there may be more."""


def find(workspace: Path, folders: int, seconds: float) -> Found:
    """Walk `workspace` for repositories, up to `folders` folders and `seconds` (blocking)."""
    found = Found()
    deadline = time.monotonic() + seconds
    pending = [str(workspace)]
    visited = 0
    while pending:
        folder = pending.pop()
        visited += 1
        if visited > folders or time.monotonic() > deadline:
            found.complete = False
            break
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        names = {entry.name for entry in entries}
        repository = "HEAD" in names and "config" in names
        if repository:
            found.repositories.append(Path(folder))
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    if entry.name == ".git":
                        found.pointers.append(Path(entry.path))
                    continue
            except OSError:
                continue
            if repository and entry.name not in _NESTED:
                continue  # objects/, refs/, logs/: no repository lives there
            if entry.name == ".git" and not all(os.path.lexists(os.path.join(entry.path, name))
                                                 for name in ("HEAD", "config")):
                found.unfinished.append(Path(entry.path))
            pending.append(entry.path)
    found.repositories.sort()
    return found
