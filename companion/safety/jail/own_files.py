"""Her own files known by identity, not by path: hard links and second mounts of them.

The jail and the sandbox keep her folders (settings, approvals, memory, plugins) out of reach by
path. A path is not the file: a hard link in the workspace to her approvals.toml is the same
file under another name, and her config folder bind-mounted into the workspace is the same
folder elsewhere. So:

- `identities` / `is_own`: a folder (or file) is hers when it, or a folder above it, is one of
  hers by device and inode number, whatever it is called (the file tools' jail);
- `detach_links`: before a sandboxed run, each file of hers that has another name (its link
  count is above one) gets a fresh copy of its own under her name, so the other name, wherever
  it is, no longer leads to it (a command may write through that name, into a copy she no
  longer reads);
- `mounted_copies`: where the mount table shows one of her folders mounted again inside the
  workspace, that place is hidden in the sandbox like the folder itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["detach_links", "identities", "is_own", "mounted_copies"]

log = logging.getLogger(__name__)

DETACH_FILES = 20_000
"""Files of hers looked at per run before the rest are left (the look is bounded)."""


def identities(paths: Iterable[Path]) -> set[tuple[int, int]]:
    """(device, inode) of each of her folders and files that exists."""
    found = set()
    for path in paths:
        with contextlib.suppress(OSError):
            info = os.stat(Path(path).expanduser())
            found.add((info.st_dev, info.st_ino))
    return found


def is_own(path: Path, mine: set[tuple[int, int]], stop: Path | None = None) -> bool:
    """True when `path` or a folder above it (up to `stop`, included) is one of `mine`."""
    current = Path(path)
    while True:
        with contextlib.suppress(OSError):
            info = os.stat(current)
            if (info.st_dev, info.st_ino) in mine:
                return True
        if current == stop or current.parent == current:
            return False
        current = current.parent


def detach_links(paths: Iterable[Path], limit: int = DETACH_FILES) -> list[Path]:
    """Give each of her files that has other names a fresh copy under her name; the files done."""
    done: list[Path] = []
    seen = 0
    for top in paths:
        pending = [str(Path(top).expanduser())]
        while pending and seen < limit:
            folder = pending.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except NotADirectoryError:
                entries = []
                _detach(Path(folder), done)  # a file of hers (a personality kept elsewhere)
            except OSError:
                continue
            for entry in entries:
                seen += 1
                try:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_nlink > 1:
                        _detach(Path(entry.path), done)
                except OSError:
                    continue
    return done


def _detach(path: Path, done: list[Path]) -> None:
    try:
        info = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink < 2:
            return
        data = path.read_bytes()
        temp = path.with_name(f".{path.name[:200]}.{secrets.token_hex(6)}.detach")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), stat.S_IMODE(info.st_mode))
            os.fsync(out.fileno())
        now = os.stat(path, follow_symlinks=False)
        if (now.st_dev, now.st_ino, now.st_mtime_ns) != (info.st_dev, info.st_ino, info.st_mtime_ns):
            os.unlink(temp)  # rewritten meanwhile (a save of hers makes a fresh file anyway)
            return
        os.replace(temp, path)
    except OSError as exc:
        log.warning("couldn't detach %s from its other names: %s", path, exc)
        return
    log.warning("%s had another name (a hard link) somewhere: it has a copy of its own now", path)
    done.append(path)


def mounted_copies(paths: Sequence[Path], workspace: str, mountinfo: str = "/proc/self/mountinfo") -> list[str]:
    """Places inside `workspace` where the mount table shows one of her folders mounted again."""
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as table:
            mounts = [_mount(line) for line in table]
    except OSError:
        return []
    mounts = [m for m in mounts if m is not None]
    found: list[str] = []
    for path in paths:
        real = os.path.realpath(Path(path).expanduser())
        home = _containing(real, mounts)
        if home is None:
            continue
        device, root, point = home
        # Her folder as its filesystem knows it (the path below that filesystem's root).
        inner = os.path.normpath(os.path.join(root, os.path.relpath(real, point)))
        for other_device, other_root, other_point in mounts:
            if other_device != device or other_point == point or not _under(other_point, workspace):
                continue
            if _under(inner, other_root):  # the mount shows a folder above hers, or hers
                copy = os.path.normpath(os.path.join(other_point, os.path.relpath(inner, other_root)))
            elif _under(other_root, inner):  # the mount shows something inside hers
                copy = other_point
            else:
                continue
            if copy != real and copy not in found:
                found.append(copy)
    return found


def _mount(line: str) -> tuple[str, str, str] | None:
    fields = line.split()
    if len(fields) < 5:
        return None
    return fields[2], _unescape(fields[3]), _unescape(fields[4])


def _unescape(text: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes.
    return text.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _containing(path: str, mounts: list[tuple[str, str, str]]) -> tuple[str, str, str] | None:
    """The mount `path` lives on (the last, deepest one whose point is above it)."""
    best = None
    for mount in mounts:
        if _under(path, mount[2]) and (best is None or len(mount[2]) >= len(best[2])):
            best = mount
    return best


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
