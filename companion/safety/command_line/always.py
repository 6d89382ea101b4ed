""""Always" is an allowlist: which exact lines may be remembered, and what git may do unasked.

A line may be saved only when it is one plain command (no metacharacters, no wildcard, no
environment prefix, no hidden characters) whose program is on the list below and whose every
option is read the way the program reads it (getopt_long: clusters, attached values,
abbreviated long options) and found on that program's list. Everything else may still run once
when the user says yes, with the reason "Always" is not offered on the card: interpreters and
build tools run workspace code, wrappers run a command we would have to judge too, and an
unknown option might be the one that runs a program (`sort --compress-program`, `rg --pre`).

git reads its repository's own settings, which a file tool can write: what git may read and run
unasked is git_settings.py's business.
"""

from __future__ import annotations

import os
import shlex

from companion.safety.command_line.danger import ASSIGNMENT, runs_code
from companion.safety.command_line.flags import (
    GRAMMARS,
    NONE,
    OPTIONAL,
    REQUIRED,
    Grammar,
    read_arguments,
    read_find,
)
from companion.safety.consent.visible import make_visible

__all__ = ["BUILD_TOOLS", "GIT_SUBCOMMANDS", "git_words_refusal", "once_only_reason", "program_of", "program_refusal"]

BUILD_TOOLS = frozenset({
    "make", "gmake", "cmake", "ninja", "meson", "npm", "npx", "pnpm", "yarn", "bun", "cargo", "go",
    "mvn", "gradle", "gradlew", "ant", "just", "pip", "pip3", "pytest", "tox", "nox", "poetry", "uv",
    "uvx", "pipx", "bundle", "rake", "composer", "dotnet", "swift", "sbt", "mix", "rebar3", "stack",
    "cabal", "dune", "zig", "bazel", "scons", "invoke", "hatch", "pdm", "conda", "mamba",
})
"""Programs that run code the workspace defines (build files, scripts, test suites, hooks)."""

WRAPPERS = frozenset({
    "env", "nice", "ionice", "taskset", "flock", "stdbuf", "time", "timeout", "watch", "xargs",
    "eval", "exec", "command", "builtin", "nohup", "setsid", "chrt", "strace", "ltrace", "unbuffer",
    "script", "parallel", "sudo", "su", "doas", "pkexec", "runuser", "chroot", "unshare", "nsenter",
    "systemd-run", "firejail", "bwrap", "busybox", "source", ".", "ssh",
})
"""Programs that run another command: we would have to judge that one too, so only once."""

_WILDCARD = frozenset("*?[")
_SHELLISH = frozenset(";&|`<>$(){}\n\r")

# Programs that write, beyond the read-only ones flags.py knows. GNU coreutils 9.1 (Debian 12).
_WRITERS: dict[str, Grammar] = {
    "rm": Grammar(
        short="fivdI",
        long={"force": NONE, "interactive": OPTIONAL, "one-file-system": NONE, "dir": NONE,
              "verbose": NONE, "preserve-root": OPTIONAL},
        known_long=frozenset({"force", "interactive", "one-file-system", "no-preserve-root",
                              "preserve-root", "recursive", "dir", "verbose", "help", "version"}),
    ),
    "rmdir": Grammar(
        short="pv", long={"parents": NONE, "verbose": NONE, "ignore-fail-on-non-empty": NONE},
        known_long=frozenset({"parents", "verbose", "ignore-fail-on-non-empty", "help", "version"}),
    ),
    "mv": Grammar(
        short="fintuvTb", short_value="St",
        long={"force": NONE, "interactive": NONE, "no-clobber": NONE, "no-target-directory": NONE,
              "update": OPTIONAL, "verbose": NONE, "backup": OPTIONAL, "suffix": REQUIRED,
              "target-directory": REQUIRED, "strip-trailing-slashes": NONE},
        known_long=frozenset({"force", "interactive", "no-clobber", "no-target-directory", "update",
                              "verbose", "backup", "suffix", "target-directory", "context", "debug",
                              "strip-trailing-slashes", "help", "version"}),
    ),
    "cp": Grammar(
        short="aifnpPLHRrvuTxbdl", short_value="St",
        long={"archive": NONE, "force": NONE, "interactive": NONE, "no-clobber": NONE,
              "recursive": NONE, "verbose": NONE, "update": OPTIONAL, "no-target-directory": NONE,
              "one-file-system": NONE, "backup": OPTIONAL, "suffix": REQUIRED, "target-directory": REQUIRED,
              "parents": NONE, "preserve": OPTIONAL, "no-preserve": REQUIRED, "dereference": NONE,
              "no-dereference": NONE, "link": NONE, "strip-trailing-slashes": NONE,
              "remove-destination": NONE, "attributes-only": NONE},
        known_long=frozenset({"archive", "attributes-only", "backup", "copy-contents", "debug",
                              "dereference", "force", "interactive", "link", "no-clobber",
                              "no-dereference", "no-preserve", "no-target-directory", "one-file-system",
                              "parents", "preserve", "recursive", "reflink", "remove-destination",
                              "sparse", "strip-trailing-slashes", "suffix", "symbolic-link",
                              "target-directory", "update", "verbose", "context", "help", "version"}),
    ),
    "touch": Grammar(
        short="acmh", short_value="dtr",
        long={"no-create": NONE, "date": REQUIRED, "reference": REQUIRED, "no-dereference": NONE,
              "time": REQUIRED},
        known_long=frozenset({"no-create", "date", "reference", "no-dereference", "time", "help",
                              "version"}),
    ),
    "sort": Grammar(
        short="bdfgiMhnRrVcCsuz", short_value="ktoS",
        long={"ignore-leading-blanks": NONE, "dictionary-order": NONE, "ignore-case": NONE,
              "general-numeric-sort": NONE, "ignore-nonprinting": NONE, "month-sort": NONE,
              "human-numeric-sort": NONE, "numeric-sort": NONE, "reverse": NONE, "version-sort": NONE,
              "check": OPTIONAL, "key": REQUIRED, "field-separator": REQUIRED, "output": REQUIRED,
              "stable": NONE, "unique": NONE, "zero-terminated": NONE, "buffer-size": REQUIRED},
        known_long=frozenset({"ignore-leading-blanks", "dictionary-order", "ignore-case",
                              "general-numeric-sort", "ignore-nonprinting", "month-sort",
                              "human-numeric-sort", "numeric-sort", "random-sort", "random-source",
                              "reverse", "sort", "version-sort", "batch-size", "check",
                              "compress-program", "debug", "files0-from", "key", "merge", "output",
                              "stable", "buffer-size", "field-separator", "temporary-directory",
                              "parallel", "unique", "zero-terminated", "help", "version"}),
    ),
    "du": Grammar(
        short="achsSkmlLxbDH0", short_value="dBt",
        long={"all": NONE, "apparent-size": NONE, "block-size": REQUIRED, "bytes": NONE, "total": NONE,
              "human-readable": NONE, "max-depth": REQUIRED, "si": NONE, "summarize": NONE,
              "threshold": REQUIRED, "one-file-system": NONE, "null": NONE, "inodes": NONE,
              "separate-dirs": NONE, "count-links": NONE},
        known_long=frozenset({"all", "apparent-size", "block-size", "bytes", "total", "dereference-args",
                              "max-depth", "files0-from", "human-readable", "inodes", "count-links",
                              "dereference", "no-dereference", "null", "separate-dirs", "si",
                              "summarize", "threshold", "time", "time-style", "exclude-from",
                              "exclude", "one-file-system", "help", "version"}),
    ),
}

GIT_SUBCOMMANDS: dict[str, Grammar] = {
    # git's parse-options also takes unique abbreviations; only exact long options are read here.
    "status": Grammar(short="sbvz", long={"short": NONE, "branch": NONE, "long": NONE,
                                          "porcelain": OPTIONAL, "verbose": NONE, "no-renames": NONE},
                      abbreviations=False),
    "diff": Grammar(short="w", long={"stat": NONE, "cached": NONE, "staged": NONE, "name-only": NONE,
                                     "name-status": NONE, "numstat": NONE, "shortstat": NONE,
                                     "no-color": NONE, "no-ext-diff": NONE, "no-textconv": NONE,
                                     "ignore-all-space": NONE},
                    abbreviations=False),
    "log": Grammar(short="p", short_value="n", numeric=True,
                   long={"oneline": NONE, "stat": NONE, "graph": NONE, "all": NONE, "no-color": NONE,
                         "reverse": NONE, "patch": NONE, "decorate": NONE, "name-only": NONE,
                         "max-count": REQUIRED, "no-ext-diff": NONE, "no-textconv": NONE},
                   abbreviations=False),
    "show": Grammar(short="s", long={"stat": NONE, "oneline": NONE, "name-only": NONE, "no-color": NONE,
                                     "no-patch": NONE, "no-ext-diff": NONE, "no-textconv": NONE},
                    abbreviations=False),
    "branch": Grammar(short="av", long={"all": NONE, "verbose": NONE, "list": NONE,
                                        "show-current": NONE}, abbreviations=False, positionals="none"),
    "rev-parse": Grammar(long={"abbrev-ref": NONE, "short": NONE, "show-toplevel": NONE},
                         abbreviations=False),
    "ls-files": Grammar(short="mdoc", long={"modified": NONE, "deleted": NONE, "others": NONE,
                                            "cached": NONE}, abbreviations=False),
}
"""git subcommands (all built in, so no alias can stand in for them) that may run unasked, and
their allowed options (none of which writes a file or runs a program)."""



def once_only_reason(line: str) -> str | None:
    """Why "always" can't be offered for `line` (a sentence), or None when it may be saved.

    Needs no workspace: the grants file loader applies the same rule to hand-edited grants.
    """
    line = line.strip()
    if not line:
        return "There's nothing to remember."
    if make_visible(line).hidden:
        return "It contains hidden or control characters, so I can only allow it once."
    if any(ch in _SHELLISH for ch in line):
        return ("It is more than one plain command (it has ;, |, &, redirections, $ or brackets), "
                "so I can only allow it once.")
    if any(ch in _WILDCARD for ch in line):
        return ("It has a wildcard, and what a wildcard matches can change (a file named like an "
                "option would become one), so I can only allow it once.")
    try:
        words = shlex.split(line)
    except ValueError:
        return "Its quoting doesn't parse, so I can only allow it once."
    if not words:
        return "There's nothing to remember."
    name, args = words[0], words[1:]
    if ASSIGNMENT.match(name):
        return "It sets environment variables for the command, so I can only allow it once."
    if "/" in name:
        return "It names a program by its path, so I can only allow it once."
    return program_refusal(name, args)


def program_refusal(name: str, args: list[str]) -> str | None:
    """Why one plain command (`name` and its words) is not on the list of those that may be
    saved, or None: its program is known and runs nothing else, and every option is known."""
    base = name.lower()
    if runs_code(base):
        return f"{name} runs code (a workspace file, or whatever it is given), so I can only allow it once."
    if base in BUILD_TOOLS:
        return f"{name} runs code from the workspace (its build or project files), so I can only allow it once."
    if base in WRAPPERS:
        return f"{name} runs another command, which I would have to judge too, so I can only allow it once."
    if base == "git":
        return git_words_refusal(args)
    if base == "find":
        refusal = read_find(args).refusal
    elif base in GRAMMARS or base in _WRITERS:
        refusal = read_arguments(base, args, _WRITERS.get(base)).refusal
    else:
        return f"I don't know every option of {name}, so I can only allow it once."
    if refusal:
        return f"I can't be sure what it does ({refusal}), so I can only allow it once."
    return None


def git_words_refusal(args: list[str]) -> str | None:
    if not args or args[0].startswith("-"):
        return ("Options before git's subcommand can reconfigure git, so I can only allow it once."
                if args else "git alone does nothing to remember.")
    sub, rest = args[0], args[1:]
    grammar = GIT_SUBCOMMANDS.get(sub)
    if grammar is None:
        return (f"git {sub} can change the repository or run code from its settings (an alias, a "
                "hook, a filter), so I can only allow it once.")
    refusal = read_arguments(f"git {sub}", rest, grammar).refusal
    if refusal:
        return f"I can't be sure what it does ({refusal}), so I can only allow it once."
    return None


def program_of(line: str) -> str | None:
    """The program of a plain one-command line (its base name), or None."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    return os.path.basename(words[0]) if words and not ASSIGNMENT.match(words[0]) else None
