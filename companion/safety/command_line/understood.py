"""Which invocations the card understands fully: an allowlist, everything else "can't tell".

The card shows the workspace files a line runs (pins.py) and promises that what it showed is
what runs. That promise holds only for forms read all the way through, so each simple command
of the line (and of every script it follows) must be one of these, or the card says "I can't
tell everything this runs" and offers no Always:

- a program whose every option is known and which runs nothing else (always.py's list), or one
  of a few that take no code whatever they are given (`true`, `sleep`, `printf`, `test`…);
- git with a subcommand that runs no hooks (always.py's git list); its settings are pinned;
- a shell given a literal script (`sh run.sh`, `bash run.sh args`), a command string it reads
  (`bash -c '…'`), or its standard input (`sh < run.sh`, `cat run.sh | sh`), with no options;
- `source` / `.` of a literal workspace script;
- Python given a literal `.py` script or `-m module`, with no option but a few that load
  nothing (`-u`, `-B`, `-O`, `-q`…);
- a program named by its path whose first line names one of those shells or Python, or that
  has none (a shell runs it).

Not understood, whatever it is: an environment assignment before a command (`PYTHONPATH=.`,
`BASH_ENV=…`), a wrapper that runs another command (`env`, `xargs`, `timeout`…), any other
interpreter (node, perl, awk, sed…), a build tool, a shell keyword or a program not listed.
"""

from __future__ import annotations

import re

from companion.safety.command_line.always import BUILD_TOOLS, git_words_refusal, program_refusal
from companion.safety.command_line.danger import SHELLS, runs_code

__all__ = ["PYTHON_OPTIONS", "is_python", "why_not_understood"]

PURE = frozenset({
    "true", "false", ":", "sleep", "printf", "test", "[", "basename", "dirname", "seq", "tr", "cut",
    "uniq", "tac", "rev", "nl", "expr", "id", "whoami", "uname", "realpath", "readlink", "cmp",
    "sha256sum", "sha1sum", "md5sum", "cksum", "exit", "return", "shift", "read", "unset", "tee",
    "rm", "rmdir", "mkdir", "touch", "cp", "mv", "ln", "chmod", "cat", "head", "tail", "wc", "ls",
    "echo", "pwd", "date", "stat", "du", "grep", "egrep", "fgrep", "dd", "truncate", "shred", "diff",
})
"""Programs and shell builtins that start nothing and load no code, whatever their options (GNU
coreutils, grep and diff: none has an option that runs a program). Others only with the options
always.py knows (`sort --compress-program`, `rg --pre` run one)."""
PYTHON_OPTIONS = frozenset({"-u", "-B", "-O", "-OO", "-q", "-b", "-bb", "-s", "-E", "-I"})
"""Python's options that change nothing about which files it runs."""
_SET_WORD = re.compile(r"[-+][euxvo]+|pipefail|errexit|nounset|xtrace|verbose")
_DYNAMIC = frozenset("$`*?[~")


def is_python(name: str) -> bool:
    return re.fullmatch(r"python[\d.]*", name) is not None


def why_not_understood(name: str, word: str, args: list[str], assignments: list[str], wrapper: str) -> str | None:
    """Why one simple command is not among the understood forms (a clause for the card), or None."""
    if name.startswith("#"):
        return None  # a comment: the shell reads no further on that line
    if wrapper:
        return f"{wrapper} runs a command I don't follow"
    if assignments and not name:
        # A shell variable of its own (lowercase: no shell gives those a meaning) changes nothing
        # a later command loads; PATH, IFS, BASH_ENV, PYTHONPATH and the like do.
        special = sorted({a.split("=", 1)[0].rstrip("+") for a in assignments} - _lowercase(assignments))
        return f"it sets {', '.join(special)}, which can change what later commands load" if special else None
    if assignments:
        names = ", ".join(sorted({a.split("=", 1)[0].rstrip("+") for a in assignments}))
        return f"it sets {names} for {name}, which can change what it loads"
    if "/" in word:
        return None  # read through by its first line (pins.py)
    if name in ("source", "."):
        return None if args and _literal(args[0]) else "it sources a file it names at run time"
    if name in SHELLS:
        return _shell_form(name, args)
    if is_python(name):
        return _python_form(name, args)
    if runs_code(name):
        return f"I don't follow everything {name} loads"
    if name in BUILD_TOOLS:
        return f"{name} runs what the workspace's project files say, which I don't follow"
    if name == "git":
        return None if git_words_refusal(args) is None else (
            f"git {args[0] if args else ''} may run the repository's hooks or programs its settings name".replace("  ", " "))
    if name == "set":
        return None if all(_SET_WORD.fullmatch(a) for a in args) and args else f"set {' '.join(args)} changes the shell"
    if name in PURE or program_refusal(name, args) is None:
        return None
    return f"I don't know everything {name} does with what it's given"


def _lowercase(assignments: list[str]) -> set[str]:
    return {name for name in (a.split("=", 1)[0].rstrip("+") for a in assignments) if name.islower()}


def _literal(arg: str) -> bool:
    return bool(arg) and not any(ch in _DYNAMIC for ch in arg)


def _shell_form(name: str, args: list[str]) -> str | None:
    if not args or args[0] == "-c":
        return None  # its standard input, or a command string that is read through
    if args[0].startswith(("-", "+")):
        return f"{name} is given options I don't follow ({args[0]})"
    return None if _literal(args[0]) else f"{name} runs a script it names at run time"


def _python_form(name: str, args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg in PYTHON_OPTIONS:
            continue
        if arg == "-m":
            return None if i + 1 < len(args) and _literal(args[i + 1]) else f"{name} runs a module it names at run time"
        if arg.startswith("-"):
            return f"{name} is given options I don't follow ({arg})"
        if not _literal(arg):
            return f"{name} runs a script it names at run time"
        if not arg.endswith(".py"):
            return f"{name} runs {arg} as a folder or archive, which I don't read through"
        return None
    return None  # its standard input
