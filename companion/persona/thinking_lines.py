"""The personality's `## Thinking lines`: what she says when her answer is slow to come.

    ## Thinking lines
    thinking: ["Hmm, let me think.", "One moment."]
    waking: Give me a moment, I'm waking up.

`thinking` is said (once per spoken turn) when no sentence of her answer is ready in time;
`waking` instead while her brain is still starting (the server loading its model). Each is
one line or a list (taken in turn); either may be left out, and the defaults below fill in.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

SECTION = "Thinking lines"
KEYS = ("thinking", "waking")


@dataclass(frozen=True)
class ThinkingLines:
    thinking: tuple[str, ...] = ("Hmm, let me think.", "Let me think about that.", "One moment.")
    """When no sentence of her answer is ready in time."""
    waking: tuple[str, ...] = ("Give me a moment, I'm waking up.",)
    """When her brain is still starting (her first answer since it was started)."""

    def pick(self, waking: bool, count: int) -> str:
        """The `count`-th line said (0-based) of the kind wanted, going round the list."""
        lines = self.waking if waking else self.thinking
        return lines[count % len(lines)] if lines else ""

    def all(self) -> list[str]:
        """Every line (to synthesize ahead, so one plays at once)."""
        return [*self.thinking, *self.waking]


def parse_thinking_lines(body: str, first_line: int, problems: list[tuple[int, str]]) -> ThinkingLines:
    """The section's text as lines; each wrong entry adds (line, message) to `problems` and
    keeps its default (a harmless problem: the rest of the file is used)."""
    body = "\n".join("" if line.strip().startswith("```") else line for line in body.splitlines())
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        problems.append((line, f"{SECTION}: this part can't be read; write 'thinking: one line' "
                                "or 'thinking: [\"a line\", \"another\"]'"))
        return ThinkingLines()
    if data is None:
        return ThinkingLines()
    if not isinstance(data, dict):
        problems.append((first_line, f"{SECTION} must be 'thinking:' and 'waking:' entries"))
        return ThinkingLines()
    found: dict[str, tuple[str, ...]] = {}
    for key, value in data.items():
        if key not in KEYS:
            problems.append((first_line, f"unknown key '{key}' in {SECTION} (use {', '.join(KEYS)})"))
            continue
        lines = [value] if isinstance(value, str) else value if isinstance(value, list) else None
        if not lines or not all(isinstance(line, str) and line.strip() for line in lines):
            problems.append((first_line, f"{key} in {SECTION} must be one line of text or a list of lines"))
            continue
        found[str(key)] = tuple(line.strip() for line in lines)
    return ThinkingLines(**found)
