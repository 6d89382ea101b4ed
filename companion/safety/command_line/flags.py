"""Which options of the auto-safe commands are read-only: an allowlist per command, read the way
the program itself reads them (getopt_long: clusters, attached values, abbreviated long options).

Anything not on a command's list makes the line ask. This is a convenience that saves a
question for plain reading commands; the kernel sandbox, not this list, is the wall.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["GRAMMARS", "NONE", "OPTIONAL", "REQUIRED", "Grammar", "Reading", "read_arguments", "read_find"]

NONE, REQUIRED, OPTIONAL = "none", "required", "optional"


@dataclass(frozen=True)
class Grammar:
    """How one command's arguments are read, and which options are allowed without asking."""

    short: str = ""
    """Allowed single-letter options that take no value."""
    short_value: str = ""
    """Allowed single-letter options that take a value (attached, `-n5`, or the next word)."""
    long: dict[str, str] = field(default_factory=dict)
    """Allowed long options and whether they take a value (none / required / optional)."""
    known_long: frozenset[str] = frozenset()
    """Every long option the program knows, allowed or not: abbreviations resolve against these."""
    numeric: bool = False
    """`-5` means a count (head, tail)."""
    positionals: str = "paths"
    """paths | pattern_then_paths | format | none | any."""
    abbreviations: bool = True
    """getopt_long accepts unique prefixes of long options; ripgrep's parser does not."""
    pattern_options: frozenset[str] = frozenset()
    """Options whose value is the pattern (then every positional is a path)."""


def _known(*names: str) -> frozenset[str]:
    return frozenset(names) | {"help", "version"}


# GNU coreutils 9, grep 3.8, ripgrep 13 (Debian 12). The known lists come from each program's --help.
GRAMMARS: dict[str, Grammar] = {
    "ls": Grammar(
        short="aAlhRtSr1dFpisngoGXUcuvxmQbNkCBZ", short_value="IwT",
        long={"all": NONE, "almost-all": NONE, "author": NONE, "directory": NONE, "escape": NONE,
              "file-type": NONE, "full-time": NONE, "group-directories-first": NONE,
              "hide-control-chars": NONE, "human-readable": NONE, "ignore-backups": NONE, "inode": NONE,
              "kibibytes": NONE, "literal": NONE, "no-group": NONE, "numeric-uid-gid": NONE,
              "quote-name": NONE, "recursive": NONE, "reverse": NONE, "show-control-chars": NONE,
              "si": NONE, "size": NONE, "zero": NONE, "block-size": REQUIRED, "format": REQUIRED,
              "hide": REQUIRED, "ignore": REQUIRED, "indicator-style": REQUIRED, "quoting-style": REQUIRED,
              "sort": REQUIRED, "tabsize": REQUIRED, "time": REQUIRED, "time-style": REQUIRED,
              "width": REQUIRED, "color": OPTIONAL, "classify": OPTIONAL},
        known_long=_known(
            "all", "almost-all", "author", "block-size", "classify", "color", "context", "dereference",
            "dereference-command-line", "dereference-command-line-symlink-to-dir", "directory", "dired",
            "escape", "file-type", "format", "full-time", "group-directories-first", "hide-control-chars",
            "hide", "human-readable", "hyperlink", "ignore-backups", "ignore", "indicator-style", "inode",
            "kibibytes", "literal", "no-group", "numeric-uid-gid", "quote-name", "quoting-style",
            "recursive", "reverse", "show-control-chars", "si", "size", "sort", "tabsize", "time",
            "time-style", "width", "zero"),
    ),
    "cat": Grammar(
        short="AbeEnstTuv",
        long={"show-all": NONE, "number-nonblank": NONE, "show-ends": NONE, "number": NONE,
              "squeeze-blank": NONE, "show-tabs": NONE, "show-nonprinting": NONE},
        known_long=_known("number", "number-nonblank", "show-all", "show-ends", "show-nonprinting",
                          "show-tabs", "squeeze-blank"),
    ),
    "head": Grammar(
        short="qvz", short_value="nc", numeric=True,
        long={"lines": REQUIRED, "bytes": REQUIRED, "quiet": NONE, "silent": NONE, "verbose": NONE,
              "zero-terminated": NONE},
        known_long=_known("bytes", "lines", "quiet", "silent", "verbose", "zero-terminated"),
    ),
    "tail": Grammar(
        short="qvz", short_value="nc", numeric=True,
        long={"lines": REQUIRED, "bytes": REQUIRED, "quiet": NONE, "silent": NONE, "verbose": NONE,
              "zero-terminated": NONE},
        known_long=_known("bytes", "follow", "lines", "max-unchanged-stats", "pid", "quiet", "retry",
                          "silent", "sleep-interval", "verbose", "zero-terminated"),
    ),
    "grep": Grammar(
        short="ivwxclLnhHoqsrEFGPIazTZbU", short_value="emABC", positionals="pattern_then_paths",
        long={"ignore-case": NONE, "no-ignore-case": NONE, "invert-match": NONE, "word-regexp": NONE,
              "line-regexp": NONE, "count": NONE, "files-with-matches": NONE, "files-without-match": NONE,
              "line-number": NONE, "no-filename": NONE, "with-filename": NONE, "only-matching": NONE,
              "quiet": NONE, "silent": NONE, "no-messages": NONE, "recursive": NONE,
              "extended-regexp": NONE, "fixed-strings": NONE, "basic-regexp": NONE, "perl-regexp": NONE,
              "text": NONE, "null": NONE, "null-data": NONE, "initial-tab": NONE, "byte-offset": NONE,
              "binary": NONE, "line-buffered": NONE, "no-group-separator": NONE, "regexp": REQUIRED,
              "max-count": REQUIRED, "after-context": REQUIRED, "before-context": REQUIRED,
              "context": REQUIRED, "include": REQUIRED, "exclude": REQUIRED, "exclude-dir": REQUIRED,
              "binary-files": REQUIRED, "group-separator": REQUIRED, "label": REQUIRED,
              "color": OPTIONAL, "colour": OPTIONAL},
        known_long=_known(
            "after-context", "basic-regexp", "before-context", "binary", "binary-files", "byte-offset",
            "color", "colour", "context", "count", "dereference-recursive", "devices", "directories",
            "exclude", "exclude-dir", "exclude-from", "extended-regexp", "file", "files-with-matches",
            "files-without-match", "fixed-strings", "group-separator", "ignore-case", "include",
            "initial-tab", "invert-match", "label", "line-buffered", "line-number", "line-regexp",
            "max-count", "no-filename", "no-group-separator", "no-ignore-case", "no-messages", "null",
            "null-data", "only-matching", "perl-regexp", "quiet", "recursive", "regexp", "silent", "text",
            "with-filename", "word-regexp"),
        pattern_options=frozenset({"-e", "--regexp"}),
    ),
    "rg": Grammar(
        short="iSsnNlcwFxvHuU", short_value="egtTABCmM", positionals="pattern_then_paths",
        abbreviations=False,
        long={"ignore-case": NONE, "smart-case": NONE, "case-sensitive": NONE, "fixed-strings": NONE,
              "word-regexp": NONE, "line-regexp": NONE, "invert-match": NONE, "line-number": NONE,
              "no-line-number": NONE, "files-with-matches": NONE, "count": NONE, "files": NONE,
              "hidden": NONE, "no-heading": NONE, "heading": NONE, "with-filename": NONE,
              "no-filename": NONE, "only-matching": NONE, "no-ignore": NONE, "glob": REQUIRED,
              "type": REQUIRED, "type-not": REQUIRED, "max-count": REQUIRED, "context": REQUIRED,
              "after-context": REQUIRED, "before-context": REQUIRED, "regexp": REQUIRED,
              "max-columns": REQUIRED, "max-depth": REQUIRED, "color": REQUIRED},
        pattern_options=frozenset({"-e", "--regexp"}),
    ),
    "wc": Grammar(
        short="cmlLw",
        long={"bytes": NONE, "chars": NONE, "lines": NONE, "max-line-length": NONE, "words": NONE},
        known_long=_known("bytes", "chars", "files0-from", "lines", "max-line-length", "words"),
    ),
    "stat": Grammar(
        short="ft", short_value="c",
        long={"file-system": NONE, "terse": NONE, "format": REQUIRED, "printf": REQUIRED, "cached": REQUIRED},
        known_long=_known("cached", "dereference", "file-system", "format", "printf", "terse"),
    ),
    "date": Grammar(
        # -I takes its value only attached (-Iseconds), so here it is read as a plain letter.
        short="uRI", short_value="d", positionals="format",
        long={"utc": NONE, "universal": NONE, "rfc-email": NONE, "date": REQUIRED, "rfc-3339": REQUIRED,
              "iso-8601": OPTIONAL, "debug": NONE, "resolution": NONE},
        known_long=_known("date", "debug", "file", "iso-8601", "reference", "resolution", "rfc-3339",
                          "rfc-email", "set", "universal", "utc"),
    ),
    # -m/--mode asks: a mode is set as given, whatever the umask (mkdir -m 1777 is world-writable).
    "mkdir": Grammar(
        short="pv",
        long={"parents": NONE, "verbose": NONE},
        known_long=_known("context", "mode", "parents", "verbose"),
    ),
    # bash's builtin pwd (the one a shell line runs) reads only -L and -P.
    "pwd": Grammar(short="LP", positionals="none", abbreviations=False),
    # bash's builtin echo reads only -n -e -E and prints every other word.
    "echo": Grammar(positionals="any"),
}


@dataclass(frozen=True)
class Reading:
    """What the arguments say: a refusal, or the positional words that name paths."""

    refusal: str | None
    paths: tuple[str, ...] = ()


def read_arguments(name: str, args: list[str], grammar: Grammar | None = None) -> Reading:
    """Read `args` of the auto-safe command `name` (or by `grammar`, for a command that is not
    auto-safe); any option not on its allowlist is a refusal."""
    grammar = grammar or GRAMMARS[name]
    if grammar.positionals == "any":
        return Reading(None)
    positionals: list[str] = []
    pattern_given = False
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positionals.extend(args[i:])
            break
        if arg.startswith("--"):
            option, _, value = arg[2:].partition("=")
            resolved, why = _resolve_long(grammar, option)
            if resolved is None:
                return Reading(f"{name} {arg.split('=')[0]} {why}")
            takes = grammar.long[resolved]
            if takes == NONE and "=" in arg:
                return Reading(f"{name} --{resolved} takes no value")
            if takes == REQUIRED and "=" not in arg:
                if i >= len(args):
                    return Reading(f"{name} --{resolved} needs a value")
                i += 1  # the next word is its value
            pattern_given |= f"--{resolved}" in grammar.pattern_options
            continue
        if arg.startswith("-") and arg != "-":
            if grammar.numeric and arg[1:].isdigit():
                continue
            consumed, refusal, letter = _read_cluster(grammar, arg, args, i)
            if refusal:
                return Reading(f"{name} {refusal}")
            pattern_given |= letter is not None and f"-{letter}" in grammar.pattern_options
            i = consumed
            continue
        positionals.append(arg)
    return _judge_positionals(name, grammar, positionals, pattern_given)


def _resolve_long(grammar: Grammar, option: str) -> tuple[str | None, str]:
    """The allowed long option `option` names, as getopt_long would read it, or (None, why)."""
    if option in grammar.long:
        return option, ""
    if option in grammar.known_long or not grammar.abbreviations:
        return None, "is not one of the read-only options I know"
    # getopt_long takes a prefix of exactly one option; several matches are an error.
    matches = sorted(n for n in grammar.known_long | set(grammar.long) if n.startswith(option))
    if not matches:
        return None, "is not an option I know"
    if len(matches) > 1:
        return None, f"is ambiguous (--{matches[0]}, --{matches[1]}…)"
    if matches[0] not in grammar.long:
        return None, f"means --{matches[0]}, which is not read-only"
    return matches[0], ""


def _read_cluster(grammar: Grammar, arg: str, args: list[str], i: int) -> tuple[int, str | None, str | None]:
    """Read `-abc` / `-n5` / `-n 5`; returns (next index, refusal, the value-taking letter if any)."""
    letters = arg[1:]
    for position, letter in enumerate(letters):
        if letter in grammar.short_value:
            if position == len(letters) - 1:  # the value is the next word
                if i >= len(args):
                    return i, f"-{letter} needs a value", letter
                return i + 1, None, letter
            return i, None, letter  # the rest of the cluster is its value
        if letter not in grammar.short:
            return i, f"-{letter} is not one of the read-only options I know", None
    return i, None, None


def _judge_positionals(name: str, grammar: Grammar, words: list[str], pattern_given: bool) -> Reading:
    if grammar.positionals == "none":
        return Reading(f"{name} takes no arguments" if words else None)
    if grammar.positionals == "format":
        odd = [w for w in words if not w.startswith("+")]
        return Reading(f"{name} {odd[0]} would set the clock" if odd else None)
    if grammar.positionals == "pattern_then_paths" and not pattern_given:
        words = words[1:]  # the first one is the pattern
    return Reading(None, tuple(w for w in words if w != "-"))


# find reads no getopt options but an expression; these predicates only select and print.
_FIND_LEADING = frozenset({"-H", "-P"})
_FIND_NO_VALUE = frozenset({
    "-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false", "-empty", "-readable",
    "-writable", "-executable", "-nouser", "-nogroup", "-depth", "-xdev", "-mount", "-noleaf",
    "-daystart", "-not", "!", "(", ")", "-a", "-and", "-o", "-or", ",", "-ignore_readdir_race",
    "-noignore_readdir_race",
})
_FIND_ONE_VALUE = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-regextype", "-type", "-maxdepth", "-mindepth", "-size", "-mtime", "-mmin", "-atime", "-amin",
    "-ctime", "-cmin", "-perm", "-user", "-group", "-uid", "-gid", "-links", "-inum", "-printf",
    "-fstype", "-used",
})


def read_find(args: list[str]) -> Reading:
    """find [-H|-P] [--] [starting points] [expression]: every predicate must be on the list.

    `--` ends find's options, not its expression: what follows is read all the same.
    """
    i = 0
    while i < len(args) and args[i] in _FIND_LEADING:
        i += 1
    if i < len(args) and args[i] == "--":
        i += 1
    paths: list[str] = []
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!", ")", ",")):
        paths.append(args[i])
        i += 1
    while i < len(args):
        word = args[i]
        if word in _FIND_ONE_VALUE:
            if i + 1 >= len(args):
                return Reading(f"find {word} needs a value")
            i += 2
        elif word in _FIND_NO_VALUE:
            i += 1
        else:
            return Reading(f"find {word} is not one of the read-only tests I know")
    return Reading(None, tuple(paths))
