"""The path jail: turn a path the model gave into a real path inside the workspace, or refuse.

`..` and symlinks are resolved *before* the check, so `notes/../../etc/passwd` and a link
pointing out of the workspace are both refused; an absolute path is accepted only when it
resolves inside the workspace. Her own files (settings, approvals, memory, plugins: see
paths.own_paths) are refused too, even when the workspace contains them, and so is a link that
leads to them. Every refusal is a `JailError` carrying a sentence she can say.

The check names a path; the file tools then open it with beneath.py, one component at a time
without following links, so a folder swapped for a link after the check leads nowhere.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath

from companion.errors import CompanionError, Stage
from companion.safety.jail.own_files import identities, is_own

__all__ = [
    "OUTSIDE_SENTENCE",
    "OWN_PATHS_SERVICE",
    "OWN_SENTENCE",
    "JailError",
    "JailedPath",
    "check_workspace",
    "check_writable",
    "ensure_workspace",
    "jailed",
    "path_folders",
    "resolve_in_workspace",
    "shown_path",
]

OUTSIDE_SENTENCE = "That path is outside my workspace."
OWN_PATHS_SERVICE = "own_paths"
"""The ctx.services key under which the runtime lists her own paths (paths.own_paths)."""
OWN_SENTENCE = "That's one of my own files, so I can't change it from here."
OWN_READ_SENTENCE = "That's one of my own files, so I can't open it from here."
NAME_TOO_LONG_SENTENCE = "That file name is too long."
PATH_TOO_LONG_SENTENCE = "That path is too long."
_NAME_MAX = 255  # bytes in one name (ext4, tmpfs, btrfs, xfs)
_PATH_MAX = 4095  # bytes in a whole path, the kernel's limit


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


def check_workspace(workspace: Path, own: Iterable[Path]) -> None:
    """Refuse a workspace inside one of her own folders (or equal to one), with a fix.

    A workspace that merely *contains* her folders is fine: the jail refuses those paths.
    """
    real = Path(os.path.realpath(Path(workspace).expanduser()))
    for folder in own:
        mine = Path(os.path.realpath(Path(folder).expanduser()))
        if real == mine or real.is_relative_to(mine):
            raise JailError(
                "workspace_is_mine",
                f"My workspace {workspace} is inside {mine}, where I keep my own files, so my tools "
                "could change my settings and approvals. Choose another folder with --workspace or in "
                "Settings (for example ~/Companion).",
            )


def resolve_in_workspace(workspace: Path, raw: object, *, allow_root: bool = True,
                         own: Iterable[Path] = (), writing: bool = True) -> Path:
    """The real path `raw` names, guaranteed inside `workspace` (created if missing).

    A relative path is taken from the workspace; `~` means the home folder. Raises
    JailError with a sentence for empty, malformed or over-long paths, for anything outside,
    and for anything in or under one of `own` (her own folders and files, links resolved).
    `writing` only picks the sentence for her own files.
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
    _check_lengths(candidate)
    # realpath resolves every symlink and `..` the way the kernel would; what is left is checked.
    try:
        resolved = Path(os.path.realpath(candidate))
    except OSError as exc:  # a link vanished mid-resolve: something is changing it right now
        raise JailError("path_changed", "That path changed while I was checking it, so I left it alone.") from exc
    if resolved != root and not resolved.is_relative_to(root):
        raise JailError("path_outside", OUTSIDE_SENTENCE)
    if _is_mine(resolved, own, root):
        raise JailError("path_is_mine", OWN_SENTENCE if writing else OWN_READ_SENTENCE)
    if resolved == root:
        if allow_root:
            return resolved
        raise JailError("path_is_workspace", "That's my whole workspace folder, not a file.")
    _check_lengths(resolved)
    try:
        looped = _still_has_a_symlink(root, resolved)
    except OSError as exc:
        raise JailError("path_unusable", f"I can't use that path: {exc.strerror or exc}.") from exc
    if looped:
        # realpath gives up inside a symlink loop and then folds later `..` by text alone,
        # which can leave a link (even one pointing out) in the "resolved" path. Refuse it.
        raise JailError("path_loop", "That path goes round a symlink loop, so I can't use it.")
    return resolved


HOME_SETTINGS_SENTENCE = ("That's one of the hidden settings files in your home folder, which your programs "
                          "read and run (at login, in every terminal), so I don't change those from here.")
GIT_SENTENCE = ("That's inside a .git folder, where git keeps the settings and hooks it runs for you, "
                "so I don't change it from here.")


PATH_SENTENCE = ("That's in {folder}, a folder your shell runs programs from (it's on your PATH), so I "
                 "don't change it from here.")
PROGRAM_SENTENCE = ("That's a program you run (it's executable, and not part of a project with its own "
                    "repository), so I don't change it from here.")


def check_writable(root: Path, resolved: Path) -> None:
    """Refuse a write that would plant something the user runs later without asking.

    In a workspace that holds the home folder: the home's hidden files and folders (~/.bashrc,
    ~/.profile, ~/.config/autostart, ~/.ssh, ~/.gitconfig), and an executable file outside a
    repository's work tree (~/bin/backup: a rewrite keeps its mode); anywhere: a folder on the
    user's PATH, and a `.git` folder's insides (its hooks and config run at the user's next
    `git commit`). The sandbox holds commands to the same rules (sandbox.py, layout.py);
    `resolved` is inside `root`.
    """
    home = Path(os.path.realpath(Path.home()))
    holds_home = home != Path("/") and (home == root or home.is_relative_to(root))
    if holds_home and resolved != home and resolved.is_relative_to(home) and \
            resolved.relative_to(home).parts[0].startswith("."):
        raise JailError("path_is_home_settings", HOME_SETTINGS_SENTENCE)
    if ".git" in resolved.relative_to(root).parts:
        raise JailError("path_in_git", GIT_SENTENCE)
    for folder in path_folders():
        if resolved == folder or resolved.is_relative_to(folder):
            raise JailError("path_on_path", PATH_SENTENCE.format(folder=folder))
    if holds_home and resolved.is_relative_to(home) and _is_program(resolved, home):
        raise JailError("path_is_program", PROGRAM_SENTENCE)


LOGIN_PATH = ("bin", ".local/bin")
"""Folders of the home that Debian's and Ubuntu's ~/.profile put on PATH at login once they
exist, whatever her own PATH (started from a menu or a service) holds."""


def path_folders(environ: dict[str, str] | None = None) -> list[Path]:
    """The folders the user's shell runs programs from, links resolved: those on PATH that
    exist ("" and "." left out), and the login PATH's even before they exist (the next login
    adds a ~/bin made now)."""
    text = (os.environ if environ is None else environ).get("PATH", "")
    home = Path.home()
    found: list[Path] = [Path(os.path.realpath(home / name)) for name in LOGIN_PATH] if home != Path("/") else []
    for entry in text.split(os.pathsep):
        if entry and entry != "." and os.path.isabs(entry) and os.path.isdir(entry):
            real = Path(os.path.realpath(entry))
            if real != Path("/") and real not in found:
                found.append(real)
    return found


def _is_program(path: Path, home: Path) -> bool:
    """An existing executable file that no repository's work tree below the home holds."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or not info.st_mode & 0o111:
        return False
    return not any(os.path.isdir(folder / ".git") for folder in path.parents if folder != home and
                   folder.is_relative_to(home))


def _check_lengths(path: Path) -> None:
    """Refuse a name or path the kernel would refuse (ENAMETOOLONG), with a sentence, up front."""
    if any(len(os.fsencode(part)) > _NAME_MAX for part in path.parts):
        raise JailError("name_too_long", NAME_TOO_LONG_SENTENCE)
    if len(os.fsencode(str(path))) > _PATH_MAX:
        raise JailError("path_too_long", PATH_TOO_LONG_SENTENCE)


def _is_mine(resolved: Path, own: Iterable[Path], root: Path | None = None) -> bool:
    own = list(own)
    for folder in own:
        mine = Path(os.path.realpath(Path(folder).expanduser()))
        if resolved == mine or resolved.is_relative_to(mine):
            return True
    # By identity too: her folder mounted again elsewhere, or a hard link to a file of hers.
    return bool(own) and is_own(resolved, identities(own), stop=root)


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


def jailed(workspace: Path, raw: object, *, allow_root: bool = True, own: Iterable[Path] = (),
           writing: bool = True) -> JailedPath:
    """Like resolve_in_workspace, split into (root, relative) for the beneath.py functions."""
    path = resolve_in_workspace(workspace, raw, allow_root=allow_root, own=own, writing=writing)
    root = ensure_workspace(workspace)
    return JailedPath(root, PurePath(path.relative_to(root)))
