"""A permit: exactly what an allowed verdict lets run, once, and the refusal when nothing may.

The gate's verdict carries it and the door (door.py) issues and honours it; admission.py reads
its pinned files. Its own module so that both can name it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from companion.errors import CompanionError, Stage
from companion.safety.consent.approval import ACCESS_READ
from companion.safety.consent.still import Held

__all__ = ["Permit", "ProcessRefused"]


class ProcessRefused(CompanionError):
    """The door would not start the process; `sentence` says why."""

    stage = Stage.SAFETY


@dataclass(frozen=True)
class Permit:
    """What an allowed verdict lets run: exactly this, once."""

    argv: tuple[str, ...]
    shown: str
    """The line (or code) the user saw or the rules judged."""
    tool: str
    stdin: bytes | None = None
    network: bool = False
    """The internet: only when the user was just asked, with "This needs the internet" on the card."""
    how: str = ""
    ticket: str = field(default="", repr=False, compare=False)
    access: str = ACCESS_READ
    """ACCESS_READ (the workspace is read-only inside) or ACCESS_WRITE (approved as changing files)."""
    pins: Mapping[str, str] = field(default_factory=dict)
    """{workspace file it runs, relative: its sha256 when it was approved}."""
    contents: Mapping[str, tuple[bytes, int]] = field(default_factory=dict, repr=False)
    """{workspace file, relative: (bytes, mode)} read when the card was shown (or the rules read
    it): shown as that in the sandbox. A pin without content is read at the run and checked."""
    visible: tuple[str, ...] = ()
    """Files and folders the sandbox hides (in the home) shown read-only anyway: a declared
    server's own program, its environment and its script (companion/mcp/program.py)."""
    hold: Held | None = field(default=None, repr=False, compare=False)
    """The card's hold on the still workspace: this run is the one it was held for."""
