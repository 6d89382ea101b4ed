"""What always asks and can never be saved: recursive rm, sudo, curl | sh, mkfs, fork bombs, ….

The line is split into its simple commands (across `;`, `&&`, pipes, `$(…)`, backticks and
command strings handed to a shell or eval, `env -S`, `flock -c` or a here-string), wrappers
such as env, xargs, taskset or timeout are looked through (every word after a wrapper is tried
as the start of the command, since their own options can't all be known), long options are
read as getopt_long reads them (`rm --rec` is `rm --recursive`), and each command is judged on
its own. Commands nested deeper than we follow are dangerous by default.
"""

from __future__ import annotations

import os
import re
import shlex

__all__ = ["ASSIGNMENT", "INTERPRETERS", "SHELLS", "danger_of", "redirect_sources", "runs_code", "simple_commands"]

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh", "ash", "busybox"})
INTERPRETERS = SHELLS | frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "ruby",
    "perl", "php", "lua", "luajit", "rscript", "julia", "pwsh", "powershell", "tclsh", "wish",
    "awk", "gawk", "mawk", "nawk", "sed", "osascript", "groovy", "scala", "irb", "ipython",
})

# Wrappers that run the rest of their arguments as a command; skipped to find the real command.
_PREFIX_WRAPPERS = frozenset({
    "env", "nohup", "nice", "ionice", "time", "timeout", "stdbuf", "xargs", "exec", "command",
    "builtin", "setsid", "strace", "ltrace", "unbuffer", "taskset", "chrt", "flock", "chroot",
    "watch",
})
# Words after which any later word may be the command that really runs.
_LOOK_THROUGH = _PREFIX_WRAPPERS | {"eval", "parallel", "script", "unshare", "nsenter", "systemd-run",
                                    "firejail", "busybox", "sudo", "doas", "runuser", "su"}
# Options whose value is a command line of its own.
_COMMAND_STRING_OPTIONS = {"env": ("-S", "--split-string"), "flock": ("-c", "--command"),
                           "script": ("-c", "--command"), "su": ("-c", "--command"),
                           "runuser": ("-c", "--command")}
_RM_LONG = ("dir", "force", "help", "interactive", "no-preserve-root", "one-file-system",
            "preserve-root", "recursive", "verbose", "version")
_CHMOD_LONG = ("changes", "dereference", "from", "help", "no-dereference", "no-preserve-root",
               "preserve-root", "quiet", "recursive", "reference", "silent", "verbose", "version")
_WRAPPER_VALUE_OPTIONS = frozenset({
    "-n", "-c", "-s", "-k", "-u", "-I", "-i", "-L", "-P", "-d", "-a", "-E", "-o", "-e", "-p",
    "--signal", "--kill-after", "--adjustment", "--unset", "--chdir", "-C", "-S",
})
_SHELL_WORDS = frozenset({"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done",
                          "while", "until", "for", "in", "case", "esac", "function", "[[", "]]"})
_REDIRECTS = frozenset({">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"})
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*&?\s*\1")
_DISK_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|mapper/|md\d|dm-|loop|sr)")
_HISTORY_FILE = re.compile(r"(^|/)(\.?[\w.-]*_history|\.history|fish_history)$")
_SHUTDOWN_VERBS = frozenset({"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate",
                             "rescue", "emergency", "hybrid-sleep"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
"""A `NAME=value` word (an environment prefix)."""


def runs_code(name: str) -> bool:
    """True for a shell or interpreter (also versioned: python3.11, node18)."""
    name = name.lower()
    return name in INTERPRETERS or re.fullmatch(r"(python|pypy|ruby|perl|node|php|lua)[\d.]*", name) is not None


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
        if ASSIGNMENT.match(word):
            assignments.append(word)
            i += 1
        elif word in _SHELL_WORDS:
            i += 1
        elif os.path.basename(word) in _PREFIX_WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or ASSIGNMENT.match(words[i])):
                takes_value = words[i] in _WRAPPER_VALUE_OPTIONS
                i += 2 if takes_value else 1
            # timeout DURATION and nice's old "-N" style take a bare value first.
            if i < len(words) and re.fullmatch(r"[\d.]+[smhd]?", words[i]):
                i += 1
        else:
            return os.path.basename(word).lower(), words[i + 1:], assignments
    return "", [], assignments


def simple_commands(line: str) -> list[tuple[str, str, list[str]]]:
    """(name, the word as written, arguments) of each simple command in `line`, wrappers skipped."""
    found = []
    for words in _segments(line)[0]:
        name, args, _ = _command_of(words)
        if name:
            found.append((name, words[len(words) - len(args) - 1], args))
    return found


def commands_as_written(line: str) -> list[tuple[str, str, list[str], list[str], str]]:
    """Like simple_commands, with what goes before the command: (name, word, arguments,
    environment assignments, the first wrapper it is run through or "")."""
    found = []
    for words in _segments(line)[0]:
        name, args, assignments = _command_of(words)
        if name:
            word = words[len(words) - len(args) - 1]
            wrapper = next((os.path.basename(w) for w in words[:len(words) - len(args) - 1]
                            if os.path.basename(w) in _PREFIX_WRAPPERS), "")
            found.append((name, word, args, assignments, wrapper))
        elif wrappers := [os.path.basename(w) for w in words if os.path.basename(w) in _PREFIX_WRAPPERS]:
            # A wrapper whose command hides in an option's value (`env -S '…'`).
            found.append((wrappers[0], wrappers[0], [], assignments, wrappers[0]))
        elif assignments:
            found.append(("", "", [], assignments, ""))  # `PATH=.:$PATH` alone: for what follows
    return found


def redirect_sources(line: str) -> list[str]:
    """The files `line` feeds to standard input with `<` (what `sh < run.sh` runs)."""
    tokens = _tokens(line)
    return [tokens[i + 1] for i, token in enumerate(tokens) if token == "<" and i + 1 < len(tokens)]


# --- what always asks ------------------------------------------------------------------


def danger_of(line: str, _depth: int = 0) -> str | None:
    """Why `line` must always be asked and can never be saved, or None."""
    if _FORK_BOMB.search(line):
        return "That looks like a fork bomb."
    if _depth > _MAX_DEPTH:
        return "That nests commands deeper than I can follow."
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
    for words in segments:
        reason = _danger_through_wrappers(words, _depth)
        if reason:
            return reason
    return _danger_of_here_strings(line, _depth)


_MAX_DEPTH = 4


def _danger_through_wrappers(words: list[str], depth: int) -> str | None:
    """After a wrapper, try every later word as the command (`taskset ff rm -rf x`, `flock L rm …`),
    and read command-string options (`env -S '…'`, `flock -c '…'`) as lines of their own."""
    for i, word in enumerate(words):
        wrapper = os.path.basename(word).lower()
        if wrapper not in _LOOK_THROUGH:
            continue
        rest = words[i + 1:]
        for j, candidate in enumerate(rest):
            reason = _danger_of_command(os.path.basename(candidate).lower(), rest[j + 1:], [], depth)
            if reason:
                return reason
            for option in _COMMAND_STRING_OPTIONS.get(wrapper, ()):
                text = rest[j + 1] if candidate == option and j + 1 < len(rest) else (
                    candidate[len(option) + 1:] if candidate.startswith(option + "=") else None)
                if text is not None:
                    reason = danger_of(text, depth + 1)
                    if reason:
                        return reason
        if wrapper == "eval" or wrapper == "watch":
            reason = danger_of(" ".join(w for w in rest if w != "eval"), depth + 1)
            if reason:
                return reason
    return None


def _danger_of_here_strings(line: str, depth: int) -> str | None:
    """`bash <<< 'rm -rf x'`: what a here-string or here-document feeds a shell is a line too."""
    tokens = _tokens(line)
    for i, token in enumerate(tokens):
        if token in ("<<<", "<<", "<") and i + 1 < len(tokens) and depth < _MAX_DEPTH:
            reason = danger_of(tokens[i + 1], depth + 1)
            if reason:
                return reason
    return None


def _long_option(arg: str, known: tuple[str, ...]) -> str | None:
    """The long option `arg` names as getopt_long reads it (a unique prefix counts), or None."""
    if not arg.startswith("--") or arg == "--":
        return None
    name = arg[2:].split("=", 1)[0]
    if name in known:
        return name
    matches = [option for option in known if option.startswith(name)]
    return matches[0] if len(matches) == 1 else None


def _danger_of_command(name: str, args: list[str], assignments: list[str], depth: int) -> str | None:
    flags = _short_flags(args)
    if any(a.split("=")[0] in ("HISTFILE", "HISTSIZE", "HISTFILESIZE") for a in assignments):
        return "That wipes the shell history."
    if name in {"sudo", "su", "doas", "pkexec", "runuser"}:
        return "That runs a command with someone else's powers."
    if name == "rm":
        longs = {_long_option(a, _RM_LONG) for a in args}
        if "r" in flags or "R" in flags or "recursive" in longs:
            return "That deletes folders and everything in them."
        if "no-preserve-root" in longs or any(_is_root_or_home(a) for a in args):
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
    if name in {"chmod", "chown", "chgrp"} and (
        "R" in flags or "recursive" in {_long_option(a, _CHMOD_LONG) for a in args}
    ) and any(
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
    if depth < _MAX_DEPTH:
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
