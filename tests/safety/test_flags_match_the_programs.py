"""The auto-safe option lists read options as the real programs do.

Every abbreviation the allowlist accepts is tried on the installed program: it must mean the
same option there (not "ambiguous", not "unrecognized"). Every abbreviation it refuses
because it means another option must mean that option to the program too. If a new
coreutils or grep adds an option, these tests say so before an abbreviation could slip by.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from companion.safety.command_line.flags import GRAMMARS, REQUIRED, _resolve_long

# A harmless value for every allowed option that needs one.
VALUES = {
    "lines": "1", "bytes": "1", "format": "%n", "printf": "%n\\n", "cached": "default",
    "block-size": "1K", "hide": "x", "ignore": "x", "indicator-style": "none",
    "quoting-style": "literal", "sort": "name", "tabsize": "8", "time": "atime", "time-style": "iso",
    "width": "80", "regexp": "x", "max-count": "1", "after-context": "1", "before-context": "1",
    "context": "1", "include": "x", "exclude": "x", "exclude-dir": "x", "binary-files": "text",
    "group-separator": "-", "label": "x", "date": "now", "rfc-3339": "date", "mode": "755",
}
GETOPT_COMMANDS = sorted(name for name, g in GRAMMARS.items() if g.abbreviations and g.long)


def _shortest_accepted(command: str, option: str) -> str:
    for length in range(1, len(option) + 1):
        resolved, _ = _resolve_long(GRAMMARS[command], option[:length])
        if resolved == option:
            return option[:length]
    return option


def _run(command: str, option: str, tmp_path: Path) -> str:
    word = f"--{option}" + (f"={VALUES[_full(command, option)]}" if _takes(command, option) else "")
    target = tmp_path / "file.txt"
    target.write_text("x\n")
    args = {"grep": [word, "x", str(target)], "mkdir": [word, str(tmp_path / "made")], "date": [word],
            }.get(command, [word, str(target)])
    done = subprocess.run([command, *args], capture_output=True, text=True, timeout=10,
                          stdin=subprocess.DEVNULL, cwd=tmp_path)
    return done.stderr


def _full(command: str, option: str) -> str:
    return _resolve_long(GRAMMARS[command], option)[0] or option


def _takes(command: str, option: str) -> bool:
    return GRAMMARS[command].long.get(_full(command, option)) == REQUIRED


@pytest.mark.parametrize("command", GETOPT_COMMANDS)
def test_every_abbreviation_the_allowlist_accepts_means_that_option_to_the_program(
        command: str, tmp_path: Path) -> None:
    for option in GRAMMARS[command].long:
        short = _shortest_accepted(command, option)
        said = _run(command, short, tmp_path)
        assert "ambiguous" not in said and "unrecognized" not in said and "invalid option" not in said, (
            f"{command} --{short} (read as --{option}): {said}")


@pytest.mark.parametrize(("command", "abbreviation", "meaning"), [
    ("tail", "f", "follow"), ("date", "fi", "file"), ("grep", "deref", "dereference-recursive"),
    ("wc", "files0", "files0-from"), ("stat", "deref", "dereference"), ("grep", "fil", "ambiguous"),
    ("ls", "deref", "ambiguous"), ("cat", "numb", "ambiguous"),
])
def test_a_refused_abbreviation_is_read_as_the_program_reads_it(command: str, abbreviation: str, meaning: str) -> None:
    resolved, why = _resolve_long(GRAMMARS[command], abbreviation)
    assert resolved is None
    # A value the option can't take makes the program say how it read the abbreviation.
    done = subprocess.run([command, f"--{abbreviation}=\x01"], capture_output=True, text=True, timeout=10,
                          stdin=subprocess.DEVNULL)
    assert "unrecognized" not in done.stderr, done.stderr
    if meaning == "ambiguous":
        assert "ambiguous" in why and "ambiguous" in done.stderr
    else:
        assert f"means --{meaning}," in why and "ambiguous" not in done.stderr
