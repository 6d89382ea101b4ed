"""Errors carry a stage, a code and a sentence she can say."""

from __future__ import annotations

import errno
from enum import StrEnum
from pathlib import Path


class Stage(StrEnum):
    BRAIN = "brain"
    TOOLS = "tools"
    PERSONALITY = "personality"
    SETTINGS = "settings"
    AUDIO = "audio"
    HEARING = "hearing"
    SPEAKING = "speaking"
    SAFETY = "safety"


class CompanionError(Exception):
    """A failure at a stage boundary, with a sentence fit to be spoken to the user."""

    stage: Stage = Stage.BRAIN

    def __init__(self, code: str, sentence: str, *, stage: Stage | None = None) -> None:
        super().__init__(sentence)
        self.code = code
        self.sentence = sentence
        if stage is not None:
            self.stage = stage

    def __str__(self) -> str:
        return self.sentence


_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_READ_ONLY = {errno.EROFS}
_FORBIDDEN = {errno.EACCES, errno.EPERM}
_SQLITE_FULL, _SQLITE_READONLY = 13, 8
"""SQLite's result codes (fixed by its C API), as sqlite3 errors carry them; not imported here,
so every module that imports errors doesn't load sqlite3."""


def could_not_save(what: str, where: Path | str, exc: BaseException) -> str:
    """One sentence for a save that failed (an OSError or an SQLite error): what was not saved,
    why in plain words, and what the user can do about it."""
    place = shown_path(where)
    code = getattr(exc, "errno", None)
    sqlite_code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(sqlite_code, int):
        sqlite_code &= 0xFF  # an extended code's primary code (SQLITE_READONLY_DBMOVED → READONLY)
    if code in _FULL or sqlite_code == _SQLITE_FULL:
        return f"I couldn't save {what}: the disk is full ({place}). Free some space there and try again."
    if code in _READ_ONLY or sqlite_code == _SQLITE_READONLY:
        return f"I couldn't save {what}: {place} is on a read-only disk."
    if code in _FORBIDDEN:
        return f"I couldn't save {what}: I'm not allowed to write in {place}. Check that folder's permissions."
    why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"I couldn't save {what} in {place} ({why})."


def shown_path(path: Path | str) -> str:
    """A path as the user reads it: under the home folder with ~."""
    try:
        return "~/" + str(Path(path).relative_to(Path.home()))
    except ValueError:
        return str(path)
