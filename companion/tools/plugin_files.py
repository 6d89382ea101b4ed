"""Loading a plugin from a .py file, only when nobody but the user (or root) can have changed it.

A plugin runs in her own process, outside the sandbox, so the file must come from a folder no
tool and no other user can write: a link, a file or folder writable by group or others, or one
owned by another user is refused with a sentence. The checked file is the one executed: it is
opened once (without following links), checked through that descriptor, and read from it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

__all__ = ["PluginRefused", "file_loader"]


class PluginRefused(ImportError):
    """A plugin file she will not load; the message says why, for the Settings row."""


def file_loader(path: Path) -> Callable[[], ModuleType]:
    """A loader that imports the plugin file `path` as a fresh module, after the checks."""

    def load() -> ModuleType:
        source = _checked_source(path)
        module = ModuleType(f"companion_plugin_{path.stem}")
        module.__file__ = str(path)
        exec(compile(source, str(path), "exec"), module.__dict__)  # the user enabled this plugin
        return module

    return load


def _checked_source(path: Path) -> bytes:
    folder = os.stat(path.parent)
    _check_owner_and_mode(folder, "its folder")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            raise PluginRefused(f"it is a link to {os.readlink(path)}, and a plugin must be the "
                                "file itself, in the plugins folder") from exc
        raise
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PluginRefused("it is not a regular file")
        _check_owner_and_mode(info, "the file")
        return f.read()


def _check_owner_and_mode(info: os.stat_result, what: str) -> None:
    if info.st_uid not in (os.geteuid(), 0):
        raise PluginRefused(f"{what} belongs to another user (uid {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PluginRefused(f"other users can change {what} (mode {stat.S_IMODE(info.st_mode):o}); "
                            "make it writable only by you (chmod go-w)")
