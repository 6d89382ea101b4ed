"""What the file tools share: the write cap and one sentence per kind of file-system error."""

from __future__ import annotations

MAX_WRITE_BYTES = 5 * 1024 * 1024
"""The largest file write_file writes and patch changes."""


def file_error_sentence(exc: OSError, name: str, verb: str) -> str:
    """What she says when reading, writing or changing (`verb`) the file `name` failed."""
    if isinstance(exc, FileNotFoundError):
        return f"There's no file called {name} in my workspace."
    if isinstance(exc, IsADirectoryError):
        return f"{name} is a folder, not a file."
    if isinstance(exc, NotADirectoryError | FileExistsError):
        return f"Part of the path {name} is a file, not a folder."
    if isinstance(exc, PermissionError):
        return f"I'm not allowed to {verb} {name}."
    return f"I couldn't {verb} {name}: {exc.strerror or exc}."
