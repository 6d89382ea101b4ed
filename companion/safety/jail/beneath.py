"""Opening files beneath a root folder without races: one component at a time, each relative to
the folder opened before it (`dir_fd`), never following a symlink (`O_NOFOLLOW`).

The jail (jail.py) decides whether a path is inside the workspace; these functions make sure
the file actually touched is the one that was checked. If a folder on the way is swapped for
a symlink after the check, the open fails (ELOOP / ENOTDIR) instead of following it out.
Every function takes the root (a real, symlink-free folder) and a path relative to it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath

__all__ = [
    "SHARED",
    "DirEntry",
    "WalkStats",
    "open_beneath",
    "read_beneath",
    "scan_beneath",
    "stat_beneath",
    "walk_files_beneath",
    "write_beneath",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(relative: str | PurePath) -> list[str]:
    parts = [p for p in PurePath(relative).parts if p not in ("", ".")]
    if any(p in ("..", "/") or "/" in p for p in parts):
        raise OSError(errno.EXDEV, "path leaves its root", str(relative))
    return parts


@contextlib.contextmanager
def _folder(root: Path, parts: list[str], *, create: bool = False) -> Iterator[int]:
    """An fd for root/parts..., opened step by step without following links; closed on exit."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


SHARED = "it has another name somewhere (a hard link), so it may be a file from outside my workspace"
"""Why a file with more than one name is not opened (shown in the tools' sentence)."""


def open_beneath(root: Path, relative: str | PurePath, flags: int = os.O_RDONLY, *, shared: bool = False) -> int:
    """An fd for the file or folder at root/relative (the caller closes it).

    Never blocks on a named pipe (O_NONBLOCK); check the type with os.fstat. A regular file
    with other names (a hard link: its link count is above one) is refused with EMLINK unless
    `shared`: the other name may be anywhere on the disk, outside the workspace too.
    """
    parts = _parts(relative)
    if not parts:
        return os.open(root, _DIR_FLAGS)
    with _folder(root, parts[:-1]) as parent:
        fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    if not shared:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            os.close(fd)
            raise OSError(errno.EMLINK, SHARED, str(relative))
    return fd


def stat_beneath(root: Path, relative: str | PurePath) -> os.stat_result | None:
    """lstat of root/relative, None when it does not exist."""
    parts = _parts(relative)
    if not parts:
        return os.stat(root)
    try:
        with _folder(root, parts[:-1]) as parent:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_beneath(root: Path, relative: str | PurePath, limit: int | None = None, *, shared: bool = False) -> bytes:
    """The bytes of the regular file root/relative (at most `limit`); raises OSError otherwise
    (also for a file with other names, unless `shared`: open_beneath)."""
    fd = open_beneath(root, relative, shared=shared)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(relative))
        raise OSError(errno.EINVAL, "not a regular file", str(relative))
    with os.fdopen(fd, "rb") as f:
        return f.read() if limit is None else f.read(limit)


def write_beneath(root: Path, relative: str | PurePath, data: bytes, *, make_folders: bool = False) -> bool:
    """Atomically replace root/relative with `data`; True when a file was there before.

    The temp file is made and renamed inside the same opened folder, so a swap of any folder
    on the way cannot redirect it. An existing file keeps its permissions; a new one gets the
    usual ones from the umask. Refuses to replace anything but a regular file.
    """
    parts = _parts(relative)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "is a folder", str(relative))
    name = parts[-1]
    with _folder(root, parts[:-1], create=make_folders) as parent:
        try:
            old = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISDIR(old.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(relative))
        if old is not None and not stat.S_ISREG(old.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(relative))
        mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask()
        temp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise
        return old is not None


class DirEntry:
    """One name in a folder, typed without following links."""

    __slots__ = ("is_dir", "is_file", "is_link", "name")

    def __init__(self, name: str, is_dir: bool, is_file: bool, is_link: bool) -> None:
        self.name, self.is_dir, self.is_file, self.is_link = name, is_dir, is_file, is_link


def scan_beneath(root: Path, relative: str | PurePath) -> list[DirEntry]:
    """The entries of the folder root/relative, sorted by name."""
    with _folder(root, _parts(relative)) as fd, os.scandir(fd) as it:
        entries = [DirEntry(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False),
                            e.is_symlink()) for e in it]
    return sorted(entries, key=lambda e: e.name)


@dataclass
class WalkStats:
    """What a walk left out, so a search can say its answer is partial and why."""

    entries: int = 0
    """Names looked at (files, folders and the rest)."""
    too_deep: int = 0
    """Folders not entered because they lie deeper than the walk's max_depth."""
    too_many: bool = False
    """The walk stopped at max_entries."""
    unreadable: int = 0
    """Folders that could not be opened or listed (gone, swapped for a link, no permission)."""


def walk_files_beneath(root: Path, relative: str | PurePath, *, skip_hidden: bool = True,
                       stop: Callable[[], bool] = lambda: False, skip: Collection[PurePath] = (),
                       max_depth: int = 64, max_entries: int = 200_000,
                       stats: WalkStats | None = None) -> Iterator[PurePath]:
    """Regular files under root/relative in path order, never entering a linked folder.

    Paths are relative to root. Iterative (a deep tree cannot exhaust the stack): each folder
    is opened relative to its parent's fd without following links, so a folder that vanishes
    or turns into a link is skipped. Folders in `skip` (relative to root) are not entered;
    folders deeper than `max_depth` below the start and names past `max_entries` are left out
    and counted in `stats`.
    """
    stats = stats if stats is not None else WalkStats()
    start = PurePath(*_parts(relative))
    skipped = {PurePath(p) for p in skip}
    try:
        with _folder(root, _parts(start)) as fd:
            first = os.dup(fd)
    except OSError:
        stats.unreadable += 1
        return
    # One open fd per level on the way down: at most max_depth + 1 at a time.
    stack: list[tuple[int, PurePath, Iterator[DirEntry]]] = []
    try:
        entries = _entries(first, stats, max_entries)
        stack.append((first, start, iter(entries)))
    except OSError:
        os.close(first)
        stats.unreadable += 1
        return
    try:
        while stack:
            if stop():
                return
            fd, here, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                os.close(fd)
                stack.pop()
                continue
            if skip_hidden and entry.name.startswith("."):
                continue
            path = here / entry.name
            if entry.is_file:
                yield path
                continue
            if not entry.is_dir or path in skipped:
                continue
            if len(stack) > max_depth:
                stats.too_deep += 1
                continue
            if stats.too_many:
                continue
            try:
                child = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                stats.unreadable += 1
                continue
            try:
                listed = _entries(child, stats, max_entries)
            except OSError:
                os.close(child)
                stats.unreadable += 1
                continue
            stack.append((child, path, iter(listed)))
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _entries(fd: int, stats: WalkStats, max_entries: int) -> list[DirEntry]:
    """The sorted entries of the open folder `fd`, counting them against the walk's budget."""
    entries = []
    with os.scandir(fd) as it:  # scandir works on a duplicate: `fd` stays open and ours
        for e in it:
            if stats.entries >= max_entries:
                stats.too_many = True
                break
            stats.entries += 1
            entries.append(DirEntry(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False),
                                    e.is_symlink()))
    return sorted(entries, key=lambda e: e.name)


def _umask() -> int:
    # Linux reports the umask without changing it; elsewhere set-and-restore is the only way.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current
