"""What the file tools share: the jail with her own folders, the write cap, one sentence per error."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from companion.safety.jail.jail import (
    NAME_TOO_LONG_SENTENCE,
    OWN_PATHS_SERVICE,
    JailedPath,
    check_writable,
    jailed,
)

MAX_WRITE_BYTES = 5 * 1024 * 1024
"""The largest file write_file writes and patch changes."""

def own_paths(ctx: Any) -> tuple[Path, ...]:
    """Her own folders for this call: the runtime's list, and always the call's data folder."""
    listed = tuple(ctx.services.get(OWN_PATHS_SERVICE, ()))
    return (*listed, Path(ctx.data_dir))


def jail(ctx: Any, raw: object, *, allow_root: bool = True, writing: bool = True) -> JailedPath:
    """The checked path `raw` names in ctx's workspace, never one of her own (and, `writing`,
    never what the user runs later: jail.check_writable); raises JailError."""
    where = jailed(ctx.workspace, raw, allow_root=allow_root, own=own_paths(ctx), writing=writing)
    if writing:
        check_writable(where.root, where.path)
    return where


@contextlib.asynccontextmanager
async def still_writing(ctx: Any, what: str) -> AsyncIterator[None]:
    """One write of hers to the workspace: waits while an approval card holds it still (from the
    card to the end of its run; safety/consent/still.py), up to most of the tool's budget, then
    raises Stilled, whose `sentence` says why nothing was written."""
    still = getattr(ctx.services.get("gate"), "still", None)
    if still is None:  # no gate, no cards: nothing to wait for
        yield
        return
    async with still.writing(what, within_s=max(0.0, float(ctx.budget_s) * 0.8)):
        yield


def file_error_sentence(exc: OSError, name: str, verb: str) -> str:
    """What she says when reading, writing or changing (`verb`) the file `name` failed."""
    code = exc.errno
    if isinstance(exc, FileNotFoundError):
        return f"There's no file called {name} in my workspace."
    if isinstance(exc, IsADirectoryError):
        return f"{name} is a folder, not a file."
    if isinstance(exc, NotADirectoryError | FileExistsError):
        return f"Part of the path {name} is a file, not a folder."
    if code == errno.ENAMETOOLONG:
        return NAME_TOO_LONG_SENTENCE
    if code == errno.ELOOP:
        # beneath.py opens every step with O_NOFOLLOW: a link on the way (often one swapped in).
        return f"{name} goes through a link, and I don't follow links when I {verb} files."
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"The disk is full, so I couldn't {verb} {name}. Free some space and ask me again."
    if code == errno.EROFS:
        return f"{name} is on a read-only disk, so I can't {verb} it."
    if code == errno.EFBIG:
        return f"{name} would be larger than this disk or system allows, so I couldn't {verb} it."
    if isinstance(exc, PermissionError):
        return f"I'm not allowed to {verb} {name}."
    return f"I couldn't {verb} {name}: {exc.strerror or exc}."
