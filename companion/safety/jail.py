"""The path jail: turn a path the model gave into a real path inside the workspace, or refuse.

`..` and symlinks are resolved *before* the check, so `notes/../../etc/passwd` and a link
pointing out of the workspace are both refused; an absolute path is accepted only when it
resolves inside the workspace. Every refusal is a `JailError` carrying a sentence she can say.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from companion.errors import CompanionError, Stage
from companion.paths import atomic_write_bytes

__all__ = [
    "OUTSIDE_SENTENCE",
    "JailError",
    "ensure_workspace",
    "resolve_in_workspace",
    "shown_path",
    "write_bytes_keeping_mode",
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
    resolved = Path(os.path.realpath(candidate))
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


def write_bytes_keeping_mode(path: Path, data: bytes) -> None:
    """Atomically replace `path`, keeping an existing file's permissions.

    A temp file is created private (0600); a file the user made executable stays so, and a
    new file gets the usual permissions from the umask.
    """
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    atomic_write_bytes(path, data)
    with contextlib.suppress(OSError):
        os.chmod(path, mode)


def _umask() -> int:
    # Linux reports the umask without changing it; elsewhere set-and-restore is the only way.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current
