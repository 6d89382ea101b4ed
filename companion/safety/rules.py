"""Reading a command line: metacharacters, what always asks, what is auto-safe, which families may be granted.

Pure functions with no I/O beyond looking at the workspace's paths; the gate (gate.py)
turns their answers into a decision.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from companion.safety.jail import JailError, resolve_in_workspace

__all__ = [
    "AUTO_SAFE_COMMANDS",
    "METACHARACTERS",
    "LineReview",
    "danger_of",
    "family_refusal",
    "has_metacharacter",
    "review_line",
]

METACHARACTERS = frozenset(";&|`<>$(){}\n\r")
"""A line with any of these is never auto-approved, nor covered by a family grant."""

AUTO_SAFE_COMMANDS = frozenset(
    {"ls", "cat", "head", "tail", "grep", "rg", "find", "wc", "stat", "pwd", "date", "echo", "mkdir"}
)

# Flags that turn a read-only command into one that runs programs, writes files, or never ends.
# Following symlinks (grep -R, rg -L, find -L) would read outside the workspace through a link.
ESCAPE_FLAGS: dict[str, tuple[str, ...]] = {
    "rg": ("--pre", "--pre-glob", "--hostname-bin", "--search-zip", "-z", "-L", "--follow"),
    "grep": ("--devices", "-R", "--dereference-recursive"),
    "tail": ("-f", "-F", "--follow", "--retry", "--pid"),
    "find": ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
             "-fls", "-L", "-follow", "-files0-from"),
    "date": ("-s", "--set", "-f", "--file"),
    "wc": ("--files0-from",),
    "sort": ("-o", "--output", "--compress-program"),
}
# Commands whose arguments are never paths.
NO_PATH_ARGUMENTS = frozenset({"echo", "date", "pwd"})

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh", "ash", "busybox"})
INTERPRETERS = SHELLS | frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "ruby",
    "perl", "php", "lua", "luajit", "rscript", "julia", "pwsh", "powershell", "tclsh", "wish",
    "awk", "gawk", "mawk", "nawk", "sed", "osascript", "groovy", "scala", "irb", "ipython",
})
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

# Wrappers that run the rest of their arguments as a command; skipped to find the real command.
_PREFIX_WRAPPERS = frozenset({
    "env", "nohup", "nice", "ionice", "time", "timeout", "stdbuf", "xargs", "exec", "command",
    "builtin", "setsid", "strace", "ltrace", "unbuffer", "taskset", "chrt", "flock", "chroot",
})
_WRAPPER_VALUE_OPTIONS = frozenset({
    "-n", "-c", "-s", "-k", "-u", "-I", "-i", "-L", "-P", "-d", "-a", "-E", "-o", "-e", "-p",
    "--signal", "--kill-after", "--adjustment", "--unset", "--chdir", "-C", "-S",
})
_SHELL_WORDS = frozenset({"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done",
                          "while", "until", "for", "in", "case", "esac", "function", "[[", "]]"})
_REDIRECTS = frozenset({">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*&?\s*\1")
_DISK_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|mapper/|md\d|dm-|loop|sr)")
_HISTORY_FILE = re.compile(r"(^|/)(\.?[\w.-]*_history|\.history|fish_history)$")
_SHUTDOWN_VERBS = frozenset({"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate",
                             "rescue", "emergency", "hybrid-sleep"})


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
    if name in INTERPRETERS or re.fullmatch(r"(python|pypy|ruby|perl|node|php|lua)[\d.]*", name):
        return f"{name} runs any program it is given, so I can only remember exact lines for it."
    if name in WRAPPERS:
        return f"{name} runs other commands, so I can only remember exact lines for it."
    if name in PAGERS_AND_EDITORS:
        return f"{name} can open a shell or edit any file, so I can only remember exact lines for it."
    if name in NETWORK_TOOLS:
        return f"{name} moves data over the network, so I can only remember exact lines for it."
    if name in {"rm", "shred", "truncate", "dd", "mkfs", "shutdown", "reboot", "chmod", "chown"} \
            or name.startswith("mkfs"):
        return f"{name} can destroy data, so I can only remember exact lines for it."
    return None


# --- parsing ---------------------------------------------------------------------------


def _split(line: str) -> list[str] | None:
    """shlex words of a plain line, or None when it does not parse (unbalanced quotes)."""
    try:
        return shlex.split(line, comments=False, posix=True)
    except ValueError:
        return None


def _tokens(line: str) -> list[str]:
    # Backticks and newlines separate commands just like `;` does.
    text = line.replace("`", " ; ").replace("\n", " ; ").replace("\r", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        # Unbalanced quotes: fall back to plain words so the danger scan still sees them.
        return re.findall(r"[^\s;&|()<>]+|[;&|()<>]+", text.replace('"', " ").replace("'", " "))


def _segments(line: str) -> tuple[list[list[str]], list[str]]:
    """The simple commands in `line` (as word lists) and every redirection target."""
    segments: list[list[str]] = [[]]
    targets: list[str] = []
    tokens = _tokens(line)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in _REDIRECTS:
            if i + 1 < len(tokens):
                targets.append(tokens[i + 1])
            i += 2
            continue
        if token and all(ch in ";&|()<>" for ch in token):
            segments.append([])
        elif token != "$":
            segments[-1].append(token)
        i += 1
    return [s for s in segments if s], targets


def _command_of(words: list[str]) -> tuple[str, list[str], list[str]]:
    """(command name, its arguments, variable assignments before it) of one simple command."""
    assignments: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            assignments.append(word)
            i += 1
        elif word in _SHELL_WORDS:
            i += 1
        elif os.path.basename(word) in _PREFIX_WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])):
                takes_value = words[i] in _WRAPPER_VALUE_OPTIONS
                i += 2 if takes_value else 1
            # timeout DURATION and nice's old "-N" style take a bare value first.
            if i < len(words) and re.fullmatch(r"[\d.]+[smhd]?", words[i]):
                i += 1
        else:
            return os.path.basename(word).lower(), words[i + 1:], assignments
    return "", [], assignments


# --- what always asks ------------------------------------------------------------------


def danger_of(line: str, _depth: int = 0) -> str | None:
    """Why `line` must always be asked and can never be saved, or None."""
    if _FORK_BOMB.search(line):
        return "That looks like a fork bomb."
    segments, targets = _segments(line)
    commands = [_command_of(words) for words in segments]
    names = {name for name, _, _ in commands}
    for target in targets:
        if _DISK_DEVICE.match(target):
            return "That writes straight to a disk device."
        if _HISTORY_FILE.search(target):
            return "That wipes the shell history."
    if names & {"curl", "wget"} and names & (INTERPRETERS | {"source", "."}):
        return "That downloads a script and runs it."
    for name, args, assignments in commands:
        reason = _danger_of_command(name, args, assignments, _depth)
        if reason:
            return reason
    return None


def _danger_of_command(name: str, args: list[str], assignments: list[str], depth: int) -> str | None:
    flags = _short_flags(args)
    if any(a.split("=")[0] in ("HISTFILE", "HISTSIZE", "HISTFILESIZE") for a in assignments):
        return "That wipes the shell history."
    if name in {"sudo", "su", "doas", "pkexec", "runuser"}:
        return "That runs a command with someone else's powers."
    if name == "rm":
        if "r" in flags or "R" in flags or "--recursive" in args:
            return "That deletes folders and everything in them."
        if "--no-preserve-root" in args or any(_is_root_or_home(a) for a in args):
            return "That deletes the whole disk or your home folder."
    if name in {"shred", "truncate", "wipe", "srm"}:
        return "That destroys a file's contents for good."
    if name.startswith("mkfs") or name in {"mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "parted"}:
        return "That formats or repartitions a disk."
    if name == "dd" and any(
        a.startswith("of=/dev/") and a not in ("of=/dev/null", "of=/dev/stdout", "of=/dev/stderr")
        for a in args
    ):
        return "That writes straight to a device."
    if name in {"shutdown", "reboot", "halt", "poweroff"} or (
        name in {"init", "telinit"} and args[:1] in (["0"], ["6"])
    ) or (name in {"systemctl", "loginctl"} and _SHUTDOWN_VERBS & set(args)):
        return "That shuts down or restarts the computer."
    if name in {"chmod", "chown", "chgrp"} and ("R" in flags or "--recursive" in args) and any(
        _is_system_wide(a) for a in args if not a.startswith("-")
    ):
        return "That changes permissions across the whole system."
    if name == "find" and {"-delete", "-exec", "-execdir", "-ok", "-okdir"} & set(args):
        return "That find deletes files or runs a command on each one."
    if (name == "history" and ("-c" in args or "-w" in args)) or (name == "unset" and "HISTFILE" in args):
        return "That wipes the shell history."
    if name in {"rm", "unlink", "ln", "mv", "cp", "tee", "sed", "dd"} and any(
        _HISTORY_FILE.search(a) for a in args
    ):
        return "That wipes the shell history."
    if depth < 3:
        # Command strings handed to a shell, eval, ssh or watch are read like a line of their own.
        nested: list[str] = []
        if name in SHELLS or name in {"script", "flock"}:
            nested = [a for a in args if not a.startswith("-")]
        elif name in {"eval", "ssh", "watch", "parallel"}:
            nested = [" ".join(args), *args]
        for text in nested:
            reason = danger_of(text, depth + 1)
            if reason:
                return reason
    return None


def _short_flags(args: list[str]) -> set[str]:
    letters: set[str] = set()
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and not arg.startswith("--"):
            letters.update(arg[1:])
    return letters


def _normal(arg: str) -> str:
    text = arg.replace("${HOME}", "~").replace("$HOME", "~").strip("\"'")
    while True:
        for suffix in ("/*", "/.", "/"):
            if text.endswith(suffix) and len(text) > 1:
                text = text[: -len(suffix)]
                break
        else:
            return text


def _is_root_or_home(arg: str) -> bool:
    text = _normal(arg)
    if text in ("", "/", "~", "*", "/.."):
        return True
    expanded = os.path.normpath(os.path.expanduser(text))
    return expanded in ("/", os.path.expanduser("~"))


def _is_system_wide(arg: str) -> bool:
    if _is_root_or_home(arg):
        return True
    expanded = os.path.normpath(os.path.expanduser(_normal(arg)))
    # A top-level system folder such as /etc or /usr.
    return expanded.startswith("/") and expanded.count("/") == 1


# --- what is auto-safe -----------------------------------------------------------------


def _family_word(line: str, words: list[str] | None) -> str | None:
    """A family grant only ever covers one plain command with no metacharacters or env prefix."""
    if not words or has_metacharacter(line) or _ASSIGNMENT.match(words[0]):
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
    escape = _escape_flag(name, args)
    if escape:
        return False, f"{name} {escape} is not read-only"
    if name in NO_PATH_ARGUMENTS:
        return True, "read-only"
    if any(_option_like_match(arg, workspace) for arg in args):
        return False, "a file name starting with - would be read as an option"
    for path in _path_arguments(args):
        if not _inside(path, workspace):
            return False, f"{path} is outside the workspace"
    return True, "read-only, inside the workspace"


def _escape_flag(name: str, args: list[str]) -> str | None:
    flags = ESCAPE_FLAGS.get(name, ())
    for arg in args:
        if arg == "--":
            break
        for flag in flags:
            if arg == flag or (flag.startswith("--") and arg.startswith(flag + "=")):
                return flag
            if name == "find":
                continue
            # A short flag hiding in a cluster such as `tail -fn5`.
            if len(flag) == 2 and arg.startswith("-") and not arg.startswith("--") and flag[1] in arg[1:]:
                return flag
    return None


def _path_arguments(args: list[str]) -> list[str]:
    paths: list[str] = []
    options_done = False
    for arg in args:
        if not options_done and arg == "--":
            options_done = True
            continue
        if not options_done and arg.startswith("-") and arg != "-":
            # An option's attached value (--file=/x, -f/x) counts when it looks like a path.
            value = arg.split("=", 1)[1] if "=" in arg else (arg[2:] if not arg.startswith("--") else "")
            if "/" in value or value.startswith("~") or value.startswith(".."):
                paths.append(value)
            continue
        if arg != "-":
            paths.append(arg)
    return paths


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
    if not glob.has_magic(path):
        return [path]
    expanded = os.path.expanduser(path)
    root = None if os.path.isabs(expanded) else str(workspace)
    found = glob.glob(expanded, root_dir=root, include_hidden=True)
    # With no match the shell passes the pattern through literally; its folder must be inside.
    return found + [path] if found else [path]
