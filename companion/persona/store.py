"""Her personality file on disk: first-run copy, reload on change, and keeping the last good one."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from pathlib import Path

from companion.paths import atomic_write_text, resource_dir
from companion.persona.document import Personality, Problem, parse_personality

log = logging.getLogger(__name__)


def shipped_default() -> Path:
    """The personality/default.md that ships with her."""
    return resource_dir("personality") / "default.md"


def shipped_templates() -> dict[str, Path]:
    """Every shipped personality template by name (file stem): default plus the others."""
    return {path.stem: path for path in sorted(resource_dir("personality").glob("*.md"))}


class PersonalityStore:
    """Holds the personality in use and watches its file.

    `refresh()` (cheap: one stat) reloads the file when it changed. A file with problems is
    never applied: `current` stays the last good version, and `problems` lists what is wrong
    with the file as it is now, each with its line number, until it is fixed. (A non-fatal
    problem, an unknown tool name, is reported but the rest of the file is used.)
    """

    def __init__(
        self, path: Path, *, known_tools: Callable[[], Collection[str]] | None = None,
        copy_default: bool = False,
    ) -> None:
        """`path`: the file to use. `copy_default`: create it from the shipped default when
        missing (true for the user's own copy in the config dir, false for --personality)."""
        self.path = Path(path)
        self._known_tools = known_tools
        self.problems: list[Problem] = []
        self._stamp: tuple[int, int] | None = None
        if copy_default and not self.path.exists():
            atomic_write_text(self.path, shipped_default().read_text(encoding="utf-8"))
        fallback, fallback_problems = parse_personality(shipped_default().read_text(encoding="utf-8"))
        if any(p.fatal for p in fallback_problems):  # a broken shipped file is a bug; say it loudly in the log
            log.error("shipped default personality has problems: %s", fallback_problems)
        self.current: Personality = fallback
        self.refresh()

    def refresh(self) -> bool:
        """Re-read the file if it changed on disk; True when something changed."""
        try:
            stat = self.path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = None
        if stamp is not None and stamp == self._stamp:
            return False
        self._stamp = stamp
        if stamp is None:
            self.problems = [Problem(1, f"the personality file {self.path} does not exist, "
                                        "so I'm using my default personality")]
            return True
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.problems = [Problem(1, f"I couldn't read {self.path.name}: {exc}")]
            return True
        return self.apply_text(text)

    def check(self, text: str) -> list[Problem]:
        """Problems `text` would have, without applying it (for the personality editor)."""
        return parse_personality(text, self._tool_names())[1]

    def apply_text(self, text: str) -> bool:
        """Use `text` if it has no problems; else keep the last good version. Always True."""
        personality, problems = parse_personality(text, self._tool_names())
        self.problems = problems
        if not any(p.fatal for p in problems):
            self.current = personality
        else:
            log.warning("personality %s has problems, keeping the last good one: %s",
                        self.path, "; ".join(map(str, problems)))
        return True

    def save(self, text: str) -> list[Problem]:
        """Write `text` to the file atomically (even with problems: nothing the user typed is
        lost) and apply it if it is good. Returns its problems."""
        atomic_write_text(self.path, text)
        self._stamp = None
        self.refresh()
        return list(self.problems)

    def problem_sentence(self) -> str:
        """One sentence she can say about the problems (empty when there are none)."""
        if not self.problems:
            return ""
        count = len(self.problems)
        listed = "; ".join(str(p) for p in self.problems[:3])
        more = f" (and {count - 3} more)" if count > 3 else ""
        noun = "problem" if count == 1 else "problems"
        if any(p.fatal for p in self.problems):
            return (f"My personality file {self.path.name} has {count} {noun}, so I'm keeping my "
                    f"last good version: {listed}{more}.")
        return f"My personality file {self.path.name} has {count} {noun} I skipped: {listed}{more}."

    def _tool_names(self) -> Collection[str] | None:
        return self._known_tools() if self._known_tools is not None else None
