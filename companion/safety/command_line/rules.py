"""Reading a command line: metacharacters, what is auto-safe, which families may be granted.

What always asks lives in danger.py. Pure functions with no I/O beyond looking at the
workspace's paths; the gate (gate.py) turns their answers into a decision, off the event loop.
Wildcards are expanded with a bound on time and matches: past it the line is not judged, it asks
("too many files").
"""

from __future__ import annotations

import glob
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from companion.errors import CompanionError, Stage
from companion.safety.command_line.always import BUILD_TOOLS
from companion.safety.command_line.danger import ASSIGNMENT as _ASSIGNMENT
from companion.safety.command_line.danger import danger_of, runs_code
from companion.safety.command_line.flags import GRAMMARS, read_arguments, read_find
from companion.safety.jail.jail import JailError, resolve_in_workspace

__all__ = [
    "AUTO_SAFE_COMMANDS",
    "CODE_FAMILY",
    "GRANTABLE_FAMILIES",
    "GLOB_LIMIT",
    "GLOB_TIME_S",
    "TOO_MANY_FILES",
    "TooManyFiles",
    "METACHARACTERS",
    "LineReview",
    "danger_of",
    "family_refusal",
    "has_metacharacter",
    "review_line",
]

METACHARACTERS = frozenset(";&|`<>$(){}\n\r")
"""A line with any of these is never auto-approved, nor covered by a family grant."""

AUTO_SAFE_COMMANDS = frozenset(GRAMMARS) | {"find"}
"""Commands that may run without asking, when every option is on their allowlist (flags.py)."""


WRAPPERS = frozenset({
    "env", "xargs", "ssh", "nohup", "sudo", "su", "doas", "pkexec", "runuser", "exec", "eval",
    "command", "builtin", "time", "timeout", "nice", "ionice", "stdbuf", "setsid", "chroot",
    "strace", "ltrace", "watch", "script", "flock", "unbuffer", "taskset", "chrt", "parallel",
    "npx", "uvx", "pipx", "unshare", "nsenter", "systemd-run", "make", "source", ".",
})
PAGERS_AND_EDITORS = frozenset({
    "less", "more", "most", "pg", "man", "vi", "vim", "nvim", "view", "vimdiff", "nano", "pico",
    "emacs", "emacsclient", "ed", "ex", "joe", "micro", "kak", "helix", "hx", "code", "gedit",
})
NETWORK_TOOLS = frozenset({
    "curl", "wget", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat", "ftp", "tftp",
    "telnet", "aria2c", "http", "https", "lftp", "rclone",
})

CODE_FAMILY = "execute_code"
"""The family name a grant uses to let harmless Python from execute_code run without asking."""

GRANTABLE_FAMILIES = frozenset({
    "git",  # only its listed subcommands, with its settings checked and put out of action (git_settings.py)
    CODE_FAMILY,  # only code the static look finds harmless, in the sandbox
    "ls", "cat", "head", "tail", "grep", "find", "wc", "stat", "pwd", "date", "echo", "printf", "du", "df",
    "file", "tree", "jq", "diff", "cmp", "md5sum", "sha1sum", "sha256sum", "sha512sum", "basename",
    "dirname", "realpath", "readlink", "uname", "whoami", "id", "uniq", "cut", "nl", "od", "tac", "rev",
    "seq", "true", "false", "cp", "mv", "touch", "mkdir", "rmdir", "ln",
})
"""The only families a grant may name: programs none of whose options runs another program
(a family grant covers every option; `rg --pre`, `sort --compress-program`, `tar
--to-command`, tmux, gdb, expect… would). A family grant runs read-only."""

GLOB_LIMIT = 2000
"""Matches of one line's wildcards the rules will look at before giving up (and asking)."""
GLOB_TIME_S = 0.5
"""Time the rules spend expanding one line's wildcards before giving up (and asking)."""
TOO_MANY_FILES = "That pattern matches too many files for me to check, so I need your OK."


class TooManyFiles(CompanionError):
    """A wildcard expands past GLOB_LIMIT matches or GLOB_TIME_S: the line can't be judged."""

    stage = Stage.SAFETY


def has_metacharacter(line: str) -> bool:
    """True when `line` contains a shell metacharacter (`; & | \\` < > $ ( ) { }` or a newline)."""
    return any(ch in METACHARACTERS for ch in line)


@dataclass(frozen=True)
class LineReview:
    """What the rules say about one command line."""

    line: str
    danger: str | None
    """Why the line always asks and can never be saved (None when it is not dangerous)."""
    family: str | None
    """The first word a family grant would match; None when no family grant may cover it."""
    auto_safe: bool
    note: str
    """Why it is (or is not) auto-safe, in a few words."""


def review_line(line: str, workspace: Path) -> LineReview:
    """Classify `line` for the gate. Never raises."""
    line = line.strip()
    danger = danger_of(line)
    words = _split(line)
    family = _family_word(line, words)
    if danger is not None:
        return LineReview(line, danger, family, False, danger)
    safe, note = _auto_safe(line, words, workspace)
    return LineReview(line, None, family, safe, note)


def family_refusal(word: str) -> str | None:
    """Why `word` can't be granted as a family (None when it can)."""
    name = os.path.basename(word.strip()).lower()
    if not name or name != word.strip().lower() or has_metacharacter(name) or " " in name:
        return "A family grant has to be a single plain command name."
    if _ASSIGNMENT.match(name):
        return "A family grant has to be a command name, not a variable."
    # None of these is on the "always" allowlist for exact lines either (always.py): they ask.
    if runs_code(name):
        return f"{name} runs any program it is given, so I'll ask each time."
    if name in WRAPPERS:
        return f"{name} runs other commands, so I'll ask each time."
    if name in PAGERS_AND_EDITORS:
        return f"{name} can open a shell or edit any file, so I'll ask each time."
    if name in NETWORK_TOOLS:
        return f"{name} moves data over the network, so I'll ask each time."
    if name in {"rm", "shred", "truncate", "dd", "mkfs", "shutdown", "reboot", "chmod", "chown"} \
            or name.startswith("mkfs"):
        return f"{name} can destroy data, so I can only remember exact lines for it."
    if name in BUILD_TOOLS:
        return f"{name} runs code from the workspace, so I can't remember it for you."
    if name not in GRANTABLE_FAMILIES:
        return (f"I only remember families from my own list of programs that can't run another "
                f"program, and {name} isn't on it, so I'll ask each time.")
    return None


# --- parsing ---------------------------------------------------------------------------


def _split(line: str) -> list[str] | None:
    """shlex words of a plain line, or None when it does not parse (unbalanced quotes)."""
    try:
        return shlex.split(line, comments=False, posix=True)
    except ValueError:
        return None


# --- what is auto-safe -----------------------------------------------------------------


def _family_word(line: str, words: list[str] | None) -> str | None:
    """A family grant only ever covers one plain command with no metacharacters or env prefix."""
    if not words or has_metacharacter(line) or _ASSIGNMENT.match(words[0]):
        return None
    if len(words) > 1 and words[1].startswith("-"):
        # Options before a subcommand reconfigure the program (`git -c alias.x='!…' x`,
        # `git -C /elsewhere`): a family grant covers `git status`, not those.
        return None
    return words[0]


def _auto_safe(line: str, words: list[str] | None, workspace: Path) -> tuple[bool, str]:
    if has_metacharacter(line):
        return False, "it has shell metacharacters"
    if words is None:
        return False, "its quoting doesn't parse"
    if not words:
        return False, "it is empty"
    name, args = words[0], words[1:]
    if _ASSIGNMENT.match(name):
        return False, "it sets environment variables"
    if name not in AUTO_SAFE_COMMANDS:
        return False, f"{name} is not on the read-only list"
    reading = read_find(args) if name == "find" else read_arguments(name, args)
    if reading.refusal:
        return False, reading.refusal
    if any(_option_like_match(arg, workspace) for arg in args):
        return False, "a file name starting with - would be read as an option"
    for path in reading.paths:
        if not _inside(path, workspace):
            return False, f"{path} is outside the workspace"
    return True, "a safe command inside the workspace"


def _inside(path: str, workspace: Path) -> bool:
    if path.startswith("~") and not (path == "~" or path.startswith("~/")):
        return False  # ~user/... names another user's home
    try:
        matches = _glob_matches(path, workspace)
        for match in matches:
            resolve_in_workspace(workspace, match)
    except JailError:
        return False
    return True


def _option_like_match(arg: str, workspace: Path) -> bool:
    """A glob that expands to a file named like an option (`--pre=x`) smuggles in a flag."""
    if not glob.has_magic(arg):
        return False
    return any(os.path.basename(m).startswith("-") for m in _glob_matches(arg, workspace))


def _glob_matches(path: str, workspace: Path) -> list[str]:
    """What bash would expand `path` to; raises TooManyFiles past the bound on time or count."""
    if not glob.has_magic(path):
        return [path]
    expanded = os.path.expanduser(path)
    root = None if os.path.isabs(expanded) else str(workspace)
    found: list[str] = []
    deadline = time.monotonic() + GLOB_TIME_S
    # iglob walks lazily: a farm of links to `.` under `*/*/*/*/*` is stopped early, not listed.
    for match in glob.iglob(expanded, root_dir=root, include_hidden=True):
        found.append(match)
        if len(found) > GLOB_LIMIT or time.monotonic() > deadline:
            raise TooManyFiles("too_many_files", TOO_MANY_FILES)
    # With no match the shell passes the pattern through literally; its folder must be inside.
    return found + [path] if found else [path]
