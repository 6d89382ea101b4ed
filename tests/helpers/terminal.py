"""Reading a child's terminal (a pty) until a line shows up: select waits on data, no sleeping."""

from __future__ import annotations

import os
import select
import time


def read_until(fd: int, wanted: str, timeout_s: float = 30.0, *, already: str = "") -> str:
    """Read the terminal until `wanted` shows up (select waits on data; no sleeping).

    `already`: what was read past the last thing waited for (one read may bring two lines),
    searched first and returned with the rest."""
    seen = already.encode()
    deadline = time.monotonic() + timeout_s
    while wanted.encode() not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            raise AssertionError(f"{wanted!r} never appeared; the terminal showed:\n{seen.decode(errors='replace')}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    return seen.decode(errors="replace")
