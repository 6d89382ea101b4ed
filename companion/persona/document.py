"""Parse a personality markdown file: front matter, `##` sections, and per-tool voice patterns."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import yaml

from companion.persona.thinking_lines import SECTION as THINKING_SECTION
from companion.persona.thinking_lines import ThinkingLines, parse_thinking_lines

FRONT_MATTER_KEYS = ("name", "aliases", "language", "voice", "face", "speed", "variation", "pitch")
FACES = ("mira", "jeeves", "pip")
"""The characters her face can be drawn as (front matter `face:`); the window draws each."""
SPEEDS = (0.5, 2.0)
"""The slowest and fastest `speed:` (1.0 is the voice's own pace)."""
VARIATIONS = (0.0, 1.5)
"""The range of each `variation:` number (piper's noise_scale and noise_w_scale)."""
PITCHES = (-12.0, 12.0)
"""The lowest and highest `pitch:`, in semitones (0 is the voice's own)."""
REQUIRED_SECTIONS = (
    "Personality", "How to address the user", "Emotional rules", "Tool voice patterns", "Quirks",
)
PATTERN_KEYS = ("announce", "heartbeat", "complete", "fail")
_HEADING = re.compile(r"^##\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the file, with the 1-based line it is on."""

    line: int
    message: str
    fatal: bool = True
    """False for a harmless entry (an unknown tool name, e.g. from a switched-off plugin):
    it is reported but does not stop the rest of the file from being used."""

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class Personality:
    """A parsed personality: who she is, how she speaks, and her lines for tools."""

    name: str
    language: str = "en"
    aliases: tuple[str, ...] = ()
    """Other names she answers to when called (front matter `aliases: [Mimi, Mirabel]`)."""
    voice: str = ""
    """`hibari/heart`, a piper voice name or an .onnx path; used when Settings names no voice."""
    face: str = "mira"
    """Which character the window draws (one of FACES)."""
    speed: float | None = None
    """How fast she talks (`speed:`, 2.0 twice as fast); None: as Settings says."""
    variation: tuple[float, float] | None = None
    """How much her voice varies in tone and in rhythm (`variation: 0.667, 0.8`: piper's
    noise_scale and noise_w_scale; hibari's voices have none); None: the voice's own."""
    pitch: float | None = None
    """Semitones above her voice's own (`pitch: -2` is lower); None: as Settings says."""
    sections: dict[str, str] = field(default_factory=dict)
    """Section title (as written) → its text, in file order; includes extra sections."""
    patterns: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Tool name → partial {"announce", "heartbeat" (tuple), "complete", "fail"}."""
    thinking: ThinkingLines = field(default_factory=ThinkingLines)
    """What she says when her answer is slow to come (`## Thinking lines`, optional)."""

    def section(self, title: str) -> str:
        for name, text in self.sections.items():
            if name.lower() == title.lower():
                return text
        return ""


def parse_personality(
    text: str, known_tools: Collection[str] | None = None
) -> tuple[Personality, list[Problem]]:
    """Parse `text`; returns what could be read and every problem found (empty when good).

    `known_tools` (when given) makes an unknown tool name in Tool voice patterns a problem.
    """
    problems: list[Problem] = []
    lines = text.splitlines()
    meta, body_start = _front_matter(lines, problems)
    sections, section_lines = _sections(lines, body_start)
    found = {title.lower() for title in sections}
    for title in REQUIRED_SECTIONS:
        if title.lower() not in found:
            problems.append(Problem(len(lines) or 1, f"missing section '## {title}'"))
    patterns: dict[str, dict[str, Any]] = {}
    thinking, thinking_problems = ThinkingLines(), []
    for title, body in sections.items():
        if title.lower() == "tool voice patterns":
            patterns = _patterns(body, section_lines[title], known_tools, problems)
        elif title.lower() == THINKING_SECTION.lower():
            thinking = parse_thinking_lines(body, section_lines[title], thinking_problems)
    problems += [Problem(line, message, fatal=False) for line, message in thinking_problems]
    face = str(meta.get("face") or "mira").strip().lower()
    if face not in FACES:
        line = _key_line(lines, "face")
        problems.append(Problem(line, f"unknown face '{face}' (choose {', '.join(FACES)})", fatal=False))
        face = "mira"
    speed = _speed(meta.get("speed"), _key_line(lines, "speed"), problems)
    variation = _variation(meta.get("variation"), _key_line(lines, "variation"), problems)
    pitch = _pitch(meta.get("pitch"), _key_line(lines, "pitch"), problems)
    personality = Personality(
        name=str(meta.get("name") or "Companion"),
        aliases=_aliases(meta.get("aliases")),
        language=str(meta.get("language") or "en"),
        voice=str(meta.get("voice") or ""),
        face=face,
        speed=speed,
        variation=variation,
        pitch=pitch,
        # Her spoken lines are no part of the system prompt.
        sections={t: b.strip() for t, b in sections.items()
                  if t.lower() not in ("tool voice patterns", THINKING_SECTION.lower())},
        patterns=patterns,
        thinking=thinking,
    )
    return personality, sorted(problems, key=lambda p: p.line)


def _key_line(lines: list[str], key: str) -> int:
    return next((i for i, text in enumerate(lines, start=1) if text.startswith(f"{key}:")), 1)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _speed(value: Any, line: int, problems: list[Problem]) -> float | None:
    """`speed:` as a number in SPEEDS; anything else is a harmless problem (Settings' speed is used)."""
    return _in_range(value, SPEEDS, line, problems,
                     f"speed: '{value}' is not a speed I can use; give a number from {SPEEDS[0]} (slow) to "
                     f"{SPEEDS[1]} (fast), 1.0 is the voice's own pace")


def _pitch(value: Any, line: int, problems: list[Problem]) -> float | None:
    """`pitch:` in semitones within PITCHES; anything else is a harmless problem (Settings' pitch is used)."""
    return _in_range(value, PITCHES, line, problems,
                     f"pitch: '{value}' is not a pitch I can use; give semitones from {PITCHES[0]:g} (lower) "
                     f"to {PITCHES[1]:g} (higher), 0 is the voice's own")


def _in_range(value: Any, bounds: tuple[float, float], line: int, problems: list[Problem],
              complaint: str) -> float | None:
    """`value` as a number within `bounds`; else None, and `complaint` as a harmless problem."""
    if value is None:
        return None
    number = _number(value)
    if number is None or not bounds[0] <= number <= bounds[1]:
        problems.append(Problem(line, complaint, fatal=False))
        return None
    return number


def _variation(value: Any, line: int, problems: list[Problem]) -> tuple[float, float] | None:
    """`variation:` as one number (both) or two (tone, rhythm), each in VARIATIONS, given as
    `0.4, 0.5` or `[0.4, 0.5]`; anything else is a harmless problem (the voice's own is used)."""
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
    numbers = [_number(part) for part in parts]
    if not 1 <= len(numbers) <= 2 or any(n is None or not VARIATIONS[0] <= n <= VARIATIONS[1] for n in numbers):
        problems.append(Problem(line, f"variation: '{value}' is not a variation I can use; give one or two "
                                      f"numbers from {VARIATIONS[0]:g} to {VARIATIONS[1]:g}, how much her voice "
                                      "varies in tone and then in rhythm (the voice's own: 0.667, 0.8)",
                                fatal=False))
        return None
    return (numbers[0], numbers[-1])


def _aliases(value: Any) -> tuple[str, ...]:
    """`aliases:` as a list or a comma-separated line; anything else is no aliases."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return ()
    return tuple(str(item).strip() for item in value if str(item).strip())


def _front_matter(lines: list[str], problems: list[Problem]) -> tuple[dict[str, Any], int]:
    """The front matter mapping and the index of the first body line."""
    if not lines or lines[0].strip() != "---":
        problems.append(Problem(1, "missing front matter: start the file with ---, then name:, "
                                   "language: and voice:, then ---"))
        return {}, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        problems.append(Problem(1, "the front matter is never closed with a --- line"))
        return {}, 0
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        problems.append(Problem(_yaml_line(exc, 2), f"front matter is not valid: {_yaml_reason(exc)}"))
        return {}, end + 1
    if not isinstance(meta, dict):
        problems.append(Problem(2, "front matter must be lines of 'key: value'"))
        return {}, end + 1
    for index, line in enumerate(lines[1:end], start=2):
        key = line.split(":", 1)[0].strip()
        if ":" in line and not line.startswith((" ", "\t", "#")) and key not in FRONT_MATTER_KEYS:
            problems.append(Problem(index, f"unknown key '{key}' in the front matter "
                                           f"(use {', '.join(FRONT_MATTER_KEYS)})"))
    if not meta.get("name"):
        problems.append(Problem(1, "the front matter needs a name: line"))
    return meta, end + 1


def _sections(lines: list[str], start: int) -> tuple[dict[str, str], dict[str, int]]:
    """`##` sections: title → text, and title → 1-based line of the section's first text line."""
    sections: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    current: str | None = None
    for index in range(start, len(lines)):
        match = _HEADING.match(lines[index])
        if match:
            current = match.group(1)
            sections[current] = []
            first_line[current] = index + 2
        elif current is not None:
            sections[current].append(lines[index])
    return {t: "\n".join(b) for t, b in sections.items()}, first_line


def _patterns(
    body: str, first_line: int, known_tools: Collection[str] | None, problems: list[Problem]
) -> dict[str, dict[str, Any]]:
    # A code fence around the patterns is allowed; blank it out so line numbers stay true.
    body = "\n".join("" if line.strip().startswith("```") else line for line in body.splitlines())
    try:
        root = yaml.compose(body, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        problems.append(Problem(_yaml_line(exc, first_line), f"Tool voice patterns: {_yaml_reason(exc)}"))
        return {}
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        problems.append(Problem(first_line, "Tool voice patterns must be 'tool_name:' entries"))
        return {}
    patterns: dict[str, dict[str, Any]] = {}
    for key_node, value_node in root.value:
        tool, line = str(key_node.value), first_line + key_node.start_mark.line
        if known_tools is not None and tool not in known_tools:
            problems.append(Problem(line, f"unknown tool '{tool}' in Tool voice patterns", fatal=False))
            continue
        if not isinstance(value_node, yaml.MappingNode):
            problems.append(Problem(line, f"{tool}: give its lines as indented "
                                          "announce:, heartbeat:, complete: and fail: entries"))
            continue
        patterns[tool] = _tool_lines(tool, value_node, first_line, problems)
    return patterns


def _tool_lines(tool: str, node: yaml.MappingNode, first_line: int, problems: list[Problem]) -> dict[str, Any]:
    lines: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key, line = str(key_node.value), first_line + key_node.start_mark.line
        if key not in PATTERN_KEYS:
            problems.append(Problem(line, f"unknown key '{key}' for {tool} "
                                          f"(use {', '.join(PATTERN_KEYS)})"))
        elif key == "heartbeat":
            if not isinstance(value_node, yaml.SequenceNode) or not all(
                isinstance(item, yaml.ScalarNode) and str(item.value).strip() for item in value_node.value
            ):
                problems.append(Problem(line, f"heartbeat for {tool} must be a list of lines, "
                                              'like ["Still looking...", "Nearly done..."]'))
            elif value_node.value:
                lines[key] = tuple(str(item.value) for item in value_node.value)
        elif not isinstance(value_node, yaml.ScalarNode) or not str(value_node.value).strip():
            problems.append(Problem(line, f"{key} for {tool} must be one line of text"))
        else:
            lines[key] = str(value_node.value)
    return lines


def _yaml_line(exc: yaml.YAMLError, first_line: int) -> int:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return first_line + mark.line if mark is not None else first_line


_PLAIN_REASONS = (
    ("found character '\\t'", "a tab is used for indenting; use spaces instead"),
    ("expected <block end>", "this line is not indented like the lines around it"),
    ("did not find expected key", "this line is not indented like the lines around it"),
    ("did not find expected '-' indicator", "this list item should start with '- ' like the others"),
    ("mapping values are not allowed", "there is a second ':' on this line; put text that contains ':' "
                                       "in quotes"),
    ("could not find expected ':'", "this line needs a 'key: value' pair (the ':' is missing)"),
    ("expected ',' or ']'", "a '[' is never closed; put text that starts with '[' in quotes"),
    ("expected ',' or '}'", "a '{' is never closed; put text that starts with '{' in quotes"),
    ("found unexpected end of stream", "a quote is never closed"),
    ("found undefined alias", "text that starts with '*' needs quotes"),
    ("cannot start any token", "this text starts with a character that needs quotes around the text"),
)
"""YAML's parser messages, said the way a person would fix them."""


def _yaml_reason(exc: yaml.YAMLError) -> str:
    raw = " ".join(str(part) for part in (getattr(exc, "context", None), getattr(exc, "problem", None), exc)
                   if part)
    for jargon, plain in _PLAIN_REASONS:
        if jargon in raw:
            return plain
    return "this part can't be read: check its indentation, and put unusual text in quotes"
