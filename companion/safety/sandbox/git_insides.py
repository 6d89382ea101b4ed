"""The insides of the workspace's git repositories that a writable command sees read-only.

git runs what a repository's settings and hooks say later, for the user (a `git commit` in a
terminal, an editor's `git status`), so a command that may write the workspace could plant a
hook or a `core.fsmonitor` for the user's next git. In a writable run each repository's
`config`, `config.worktree`, `commondir`, `hooks/` and `info/`, each linked work tree's
`config.worktree`, `commondir` and `gitdir`, and every `.git` file (`gitdir: …`) are bound
read-only where they exist; objects, refs, the index and HEAD stay writable, so git still
commits. What isn't there can't be bound, and git's own files must be made in `.git` itself:
a new `commondir` there (which points git at another folder's settings), a `hooks/` a
repository was made without, a new repository. Her own unasked git isn't led by them (it asks
for a `commondir`, checks every repository's settings and runs no hook: git_settings.py); the
user's own git would be.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from companion.safety.jail.repositories import find

__all__ = ["read_only_insides"]

_INSIDES = ("config", "config.worktree", "commondir", "hooks", "info")
_WORK_TREE_INSIDES = ("config.worktree", "commondir", "gitdir")
WALK_FOLDERS = 5_000
WALK_TIME_S = 0.1
"""How far the walk looks per writable run (a home workspace is large; each run pays it)."""


def read_only_insides(workspace: str) -> list[str]:
    """Every existing path above, in the repositories a bounded walk of `workspace` finds."""
    walked = find(Path(workspace), WALK_FOLDERS, WALK_TIME_S)
    paths: list[str] = []
    for repository in walked.repositories:
        paths += [str(repository / name) for name in _INSIDES]
        trees = repository / "worktrees"
        with contextlib.suppress(OSError):
            for tree in sorted(os.listdir(trees)):
                paths += [str(trees / tree / name) for name in _WORK_TREE_INSIDES]
    paths += [str(pointer) for pointer in walked.pointers]
    return [path for path in paths if os.path.lexists(path) and not os.path.islink(path)]
