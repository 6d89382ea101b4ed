"""The path jail: turn a path the model gave into a real path inside the workspace, or refuse.

`..` and symlinks are resolved *before* the check, so `notes/../../etc/passwd` and a link
pointing out of the workspace are both refused; an absolute path is accepted only when it
resolves inside the workspace. Every refusal is a `JailError` carrying a sentence she can say.

The check names a path; the file tools then open it with beneath.py, one component at a time
without following links, so a folder swapped for a link after the check leads nowhere.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePath

from companion.errors import CompanionError, Stage

__all__ = [
    "OUTSIDE_SENTENCE",
    "JailError",
    "JailedPath",
    "ensure_workspace",
    "jailed",
    "resolve_in_workspace",
    "shown_path",
]

OUTSIDE_SENTENCE = "That path is outside my workspace."


class JailError(CompanionError):
    """A path the file tools must not touch; `sentence` says why in plain words."""

    stage = Stage.SAFETY


def ensure_workspace(workspace: Path) -> Path:
    """Create the workspace folder if needed and return its real (symlink-free) path."""
    workspace = Path(workspace).expanduser()
    try:
        workspace.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JailError(
            "workspace_unusable", f"I can't use my workspace folder {workspace}: {exc.strerror}."
        ) from exc
    if not workspace.is_dir():
        raise JailError("workspace_unusable", f"My workspace {workspace} is not a folder.")
    return workspace.resolve()


def resolve_in_workspace(workspace: Path, raw: object, *, allow_root: bool = True) -> Path:
    """The real path `raw` names, guaranteed inside `workspace` (created if missing).

    A relative path is taken from the workspace; `~` means the home folder. Raises
    JailError with a sentence for empty or malformed paths and for anything outside.
    """
    root = ensure_workspace(workspace)
    if not isinstance(raw, str) or not raw.strip():
        raise JailError("path_missing", "I need a path to a file or folder in my workspace.")
    if "\x00" in raw:
        raise JailError("path_invalid", "That path has a null character in it, so I can't use it.")
    text = raw.strip()
    if text == "~" or text.startswith("~/"):
        text = str(Path.home()) + text[1:]
    candidate = Path(text)
    if not candidate.is_absolute():
        candidate = root / candidate
    # realpath resolves every symlink and `..` the way the kernel would; what is left is checked.
    try:
        resolved = Path(os.path.realpath(candidate))
    except OSError as exc:  # a link vanished mid-resolve: something is changing it right now
        raise JailError("path_changed", "That path changed while I was checking it, so I left it alone.") from exc
    if resolved == root:
        if allow_root:
            return resolved
        raise JailError("path_is_workspace", "That's my whole workspace folder, not a file.")
    if not resolved.is_relative_to(root):
        raise JailError("path_outside", OUTSIDE_SENTENCE)
    if _still_has_a_symlink(root, resolved):
        # realpath gives up inside a symlink loop and then folds later `..` by text alone,
        # which can leave a link (even one pointing out) in the "resolved" path. Refuse it.
        raise JailError("path_loop", "That path goes round a symlink loop, so I can't use it.")
    return resolved


def _still_has_a_symlink(root: Path, resolved: Path) -> bool:
    current = root
    for part in resolved.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return True
        if not current.exists():
            return False
    return False


def shown_path(workspace: Path, path: Path) -> str:
    """How a jailed path is named to the user: relative to the workspace."""
    root = Path(workspace).expanduser().resolve()
    with contextlib.suppress(ValueError):
        relative = path.relative_to(root)
        return str(relative) if str(relative) != "." else "the workspace"
    return str(path)


@dataclass(frozen=True)
class JailedPath:
    """A checked path: the workspace's real folder and the way down from it (no links, no `..`)."""

    root: Path
    relative: PurePath

    @property
    def path(self) -> Path:
        return self.root / self.relative


def jailed(workspace: Path, raw: object, *, allow_root: bool = True) -> JailedPath:
    """Like resolve_in_workspace, split into (root, relative) for the beneath.py functions."""
    path = resolve_in_workspace(workspace, raw, allow_root=allow_root)
    root = ensure_workspace(workspace)
    return JailedPath(root, PurePath(path.relative_to(root)))
