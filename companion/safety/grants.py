"""Saved approvals ("always allow"): exact command lines and command families, in a TOML file.

A saved line that runs workspace files keeps their content hashes (`pins`): the gate asks
again when one of them changed.

The file (approvals.toml in the config folder) is written atomically and may be edited by
hand; a broken file, or one whose values have the wrong type (a string where a list belongs),
is set aside and she starts with no grants, which only means she asks. A hand-edited line the
rules would not let her save ("Always" is an allowlist: always.py) or a family they refuse is
dropped, and `notice` says so.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import tomli_w

from companion.paths import atomic_write_text
from companion.safety.command_line.always import once_only_reason
from companion.safety.command_line.rules import danger_of, family_refusal
from companion.safety.consent.visible import make_visible

__all__ = ["GrantError", "GrantStore", "Grants", "refusal_of_line"]

log = logging.getLogger(__name__)

_MCP_KEY = re.compile(r"mcp:[a-z0-9_-]+/[A-Za-z0-9_.-]+")
"""An "always" for one tool of one MCP server (not a command line)."""


def refusal_of_line(line: str) -> str | None:
    """Why `line` may not be remembered (a sentence), or None."""
    line = line.strip()
    if _MCP_KEY.fullmatch(line):
        return None
    danger = danger_of(line)
    if danger:
        return f"{danger} I'll always ask before running that."
    return once_only_reason(line)


class GrantError(ValueError):
    """A grant that may not be saved; the message is a sentence for the user."""


@dataclass(frozen=True)
class Grants:
    lines: tuple[str, ...] = ()
    """Exact command lines (or exact code) that run without asking."""
    families: tuple[str, ...] = ()
    """First words whose plain single commands run without asking (e.g. "git")."""
    pins: dict[str, dict[str, str]] = field(default_factory=dict)
    """For a saved line: {workspace file it runs: sha256 when "always" was said}."""


class GrantStore:
    """The grants file: read once, rewritten whole (atomically) on every change."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.notice: str | None = None
        """A sentence for the user when the file was broken and set aside."""
        self._seen = self._stamp()
        self._grants = self._load()

    def current(self) -> Grants:
        """The grants now; a file edited by hand since the last look is read again."""
        stamp = self._stamp()
        if stamp != self._seen:
            self._seen = stamp
            self._grants = self._load()
        return self._grants

    def has_line(self, line: str) -> bool:
        return line.strip() in self.current().lines

    def has_family(self, word: str | None) -> bool:
        return word is not None and word in self.current().families

    def pins_for(self, line: str) -> dict[str, str]:
        """The file hashes saved with the line grant for `line` (empty when none)."""
        return dict(self.current().pins.get(line.strip(), {}))

    def add_line(self, line: str, pins: dict[str, str] | None = None) -> None:
        """Remember an exact line (with the hashes of the workspace files it runs).
        Raises GrantError for a line that must always ask."""
        line = line.strip()
        if not line:
            raise GrantError("There's no command to remember.")
        refusal = refusal_of_line(line)
        if refusal:
            raise GrantError(refusal)
        grants = self.current()
        lines = grants.lines if line in grants.lines else (*grants.lines, line)
        all_pins = {k: v for k, v in grants.pins.items() if k != line}
        if pins:
            all_pins[line] = dict(pins)
        if (lines, all_pins) != (grants.lines, grants.pins):
            self._save(Grants(lines, grants.families, all_pins))

    def add_family(self, word: str) -> None:
        """Remember a family (first word). Raises GrantError for refused families."""
        word = word.strip()
        refusal = family_refusal(word)
        if refusal:
            raise GrantError(refusal)
        grants = self.current()
        if word not in grants.families:
            self._save(Grants(grants.lines, (*grants.families, word), grants.pins))

    def revoke(self, value: str) -> bool:
        """Forget a saved line or family; True when something was removed."""
        value = value.strip()
        grants = self.current()
        lines = tuple(x for x in grants.lines if x != value)
        families = tuple(x for x in grants.families if x != value)
        if (lines, families) == (grants.lines, grants.families):
            return False
        self._save(Grants(lines, families, {k: v for k, v in grants.pins.items() if k in lines}))
        return True

    def revoke_all(self) -> None:
        self._save(Grants())

    def _save(self, grants: Grants) -> None:
        data: dict = {"lines": list(grants.lines), "families": list(grants.families)}
        if grants.pins:
            data["pins"] = grants.pins
        atomic_write_text(self.path, tomli_w.dumps(data))
        self._grants = grants
        self._seen = self._stamp()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def _load(self) -> Grants:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Grants()
        except OSError as exc:
            self.notice = f"I couldn't read your saved approvals ({exc.strerror}), so I'll ask every time."
            return Grants()
        try:
            data = tomllib.loads(text)
            lines, families = data.get("lines", []), data.get("families", [])
            pins = data.get("pins", {})
            # A string where a list belongs would be read one character at a time.
            if not isinstance(lines, list) or not isinstance(families, list):
                raise ValueError("lines and families must be lists")
            if not all(isinstance(x, str) for x in [*lines, *families]):
                raise ValueError("lines and families must be lists of strings")
            if not isinstance(pins, dict) or not all(
                isinstance(v, dict) and all(isinstance(h, str) for h in v.values()) for v in pins.values()
            ):
                raise ValueError("pins must map lines to tables of file hashes")
        except (tomllib.TOMLDecodeError, ValueError, TypeError, RecursionError) as exc:
            # RecursionError: tomllib reads nested arrays recursively; a few thousand deep stop it.
            backup = self.path.with_name(f"{self.path.stem}.broken-{datetime.now():%Y%m%d-%H%M%S}.toml")
            os.replace(self.path, backup)
            log.warning("approvals file %s is broken (%s); moved to %s", self.path, exc, backup)
            self.notice = (
                f"Your saved approvals were broken, so I set them aside as {backup.name} "
                "and will ask before running commands again."
            )
            return Grants()
        # A hand-edited file can't smuggle in a grant the rules forbid.
        kept = tuple(dict.fromkeys(x.strip() for x in lines if x.strip() and not refusal_of_line(x)))
        kept_families = tuple(dict.fromkeys(x.strip() for x in families if not family_refusal(x)))
        dropped_lines = [x.strip() for x in lines if x.strip() and x.strip() not in kept]
        # Every family by name (they are few, and one the user meant to trust must not vanish
        # unsaid: only families on the built-in list load, rules.GRANTABLE_FAMILIES).
        dropped_families = list(dict.fromkeys(x.strip() for x in families if x.strip() not in kept_families))
        dropped = dropped_lines + dropped_families
        if dropped:
            log.warning("approvals file %s: dropped grants the rules refuse: %s", self.path, dropped)
            named = [make_visible(x).text for x in [*dropped_lines[:3], *dropped_families]]
            self.notice = (f"I dropped {len(dropped)} saved approval{'s' if len(dropped) != 1 else ''} "
                           f"I'm not allowed to remember ({', '.join(named)}"
                           f"{'…' if len(dropped_lines) > 3 else ''}), so I'll ask for those.")
        return Grants(kept, kept_families,
                      {line: dict(files) for line, files in pins.items() if line in kept})
