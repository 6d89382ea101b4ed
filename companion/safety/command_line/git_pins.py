"""What a git line on a card reads of its repositories' settings, held from the card to the run.

A yes to `git log -p` is a yes to git as the workspace's repositories are set up when the card
is shown: a textconv, filter or hook folder written into a `config` while the card is open is
not what was approved. So for a line that runs git, the settings files git could read are taken
with the files the line runs (pins.py): each repository's `config` and `config.worktree`, each
`.git` file (`gitdir: …`), and the `config` of a `.git` folder that has none yet and of the
workspace's own `.git` whether or not it is there (both pinned as absent, so one that appears
asks again). A change before the answer asks again, and the door shows git the content read.
A saved grant keeps none of them: an unasked git line checks the settings itself (git_settings.py).
What can't be held is said on the card: settings that include other files, a `.git` that is a
link, more folders than the walk looks at.
"""

from __future__ import annotations

import hashlib
import re
import stat
from pathlib import Path, PurePath

from companion.safety.command_line import git_settings, pins
from companion.safety.command_line.danger import simple_commands
from companion.safety.jail.beneath import read_beneath, stat_beneath
from companion.safety.jail.repositories import find

__all__ = ["fingerprint", "runs_git", "settings_files", "take"]

_INCLUDE = re.compile(rb"^\s*\[\s*include(?:if)?\b", re.IGNORECASE | re.MULTILINE)


def runs_git(line: str) -> bool:
    """True when a simple command of `line` is git."""
    return any(name == "git" for name, _word, _args in simple_commands(line))


def settings_files(workspace: Path) -> tuple[list[PurePath], list[str]]:
    """The settings files git could read in `workspace` (relative, existing or not), and why
    that set can't all be known (clauses for the card)."""
    root = Path(workspace).expanduser().resolve()
    walked = find(root, git_settings.WALK_FOLDERS, git_settings.WALK_TIME_S)
    files = {PurePath(".git/config")}
    unknown = [] if walked.complete else ["it may read the settings of more repositories than I can look at"]
    for folder in walked.repositories:
        files |= {(folder / name).relative_to(root) for name in ("config", "config.worktree")
                  if name == "config" or (folder / name).exists()}
    files |= {(folder / "config").relative_to(root) for folder in walked.unfinished}
    for pointer in walked.pointers:
        if pointer.is_symlink():
            unknown.append(f"{pointer.relative_to(root)} is a link, which may point elsewhere by the time it runs")
        else:
            files.add(pointer.relative_to(root))
    return sorted(files), unknown


def take(line: str, workspace: Path) -> pins.Taken:
    """pins.take, with git's settings files when the line runs git."""
    taken = pins.take(line, workspace)
    if not runs_git(line):
        return taken
    root = Path(workspace).expanduser().resolve()
    files, unknown = settings_files(root)
    contents, hashes = dict(taken.contents), dict(taken.hashes)
    for relative in files:
        data, mode = _read(root, relative)
        hashes[str(relative)] = hashlib.sha256(data).hexdigest() if mode else ""
        if mode:
            contents[str(relative)] = (data, mode)
            if _INCLUDE.search(data):
                unknown.append(f"{relative} takes more settings from other files")
    return pins.Taken(contents, hashes, (*taken.unknown, *unknown), frozenset(str(f) for f in files))


def fingerprint(line: str, workspace: Path) -> dict[str, str]:
    """pins.fingerprint, with git's settings files when the line runs git."""
    hashes = pins.fingerprint(line, workspace)
    if runs_git(line):
        root = Path(workspace).expanduser().resolve()
        for relative in settings_files(root)[0]:
            data, mode = _read(root, relative)
            hashes[str(relative)] = hashlib.sha256(data).hexdigest() if mode else ""
    return hashes


def _read(root: Path, relative: PurePath) -> tuple[bytes, int]:
    """(bytes, mode) of a regular file; (b"", 0) when there is none (or it can't be read)."""
    try:
        info = stat_beneath(root, relative)
        if info is None or not stat.S_ISREG(info.st_mode):
            return b"", 0
        return read_beneath(root, relative, pins.MAX_HASHED_BYTES, shared=True), info.st_mode
    except OSError:
        return b"", 0
