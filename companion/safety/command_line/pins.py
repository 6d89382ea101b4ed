"""Which workspace files a command line runs, and their content hashes.

A yes to `sh run.sh` means "this run.sh", not whatever run.sh becomes: the gate hashes every
workspace file the line runs when the question is put, asks again if one changed before the
answer, and hands the hashes to the permit so the door runs that very content. A saved line
grant keeps them too. Files a line runs: a command named by path (`./run.sh`), the script an
interpreter or `source` is given (`python tool.py`, `sh run.sh`, `sh < run.sh`, also inside
`bash -c "…"`, `python -m tool`, `cat run.sh | sh`), what those pull in (`source lib.sh`,
`. ./env.sh`, scripts a script runs, a Python script's imports of workspace modules, make's
`include`), and the files a build tool reads implicitly (Makefile,
also under `make -C dir`, package.json and .npmrc, justfile), a few levels deep. A family grant
never covers a line that runs a workspace file.

Only the invocations understood.py lists are read as understood; any other form adds its
clause to `unknown`, and so do a program run by path whose first line names anything but a shell
or Python, a compiled copy in `__pycache__` or a same-named module beside a pinned one, and a
module in Python's first folder named like one it has elsewhere. The workspace is still from the
card to the end of the run (consent/still.py), so what these checks see is what is there then.
What it can't know is said instead (`unknown`): a script that builds what it runs at run time
(`sh -c "$x"`, `eval`, a command string nested deeper than it follows), a Python file that
imports by a name it computes (`importlib`, `__import__`, `exec`) or that imports a module a
file of the same name in its folder would replace, make's recipes (commands of their own), a
script too large to read through, more files than it follows, a file named through a link.
`take` reads every file it found once, when the card is shown: that content (not whatever the
file is by then) is what the sandbox shows at its path.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from companion.safety.command_line.danger import (
    INTERPRETERS,
    SHELLS,
    commands_as_written,
    redirect_sources,
    simple_commands,
)
from companion.safety.command_line.python_pins import imported_files, loaded_beside, shadows
from companion.safety.command_line.understood import is_python, why_not_understood
from companion.safety.jail.beneath import read_beneath, stat_beneath
from companion.safety.jail.jail import JailError, jailed

__all__ = ["Taken", "files_run_by", "fingerprint", "fingerprint_code", "take", "take_code"]

MAX_HASHED_BYTES = 64 * 1024 * 1024
MAX_TAKEN_BYTES = 128 * 1024 * 1024
"""Content carried from the card to the sandbox, all files together; past it the rest are checked by hash."""
MAX_READ_BYTES = 256 * 1024
"""How much of a pinned script is read to find what it pulls in."""
MAX_PINNED = 200
"""Files followed per line: past this the rest are not looked into (the first ones are pinned)."""
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_IMPLICIT = {
    "make": _MAKEFILES,
    "npm": ("package.json", ".npmrc"), "pnpm": ("package.json", ".npmrc"), "yarn": ("package.json", ".npmrc", ".yarnrc"),
    "just": ("justfile", "Justfile", ".justfile"),
}
_MAKE_INCLUDE = re.compile(r"^\s*[-s]?include\s+(.+)$")
_CODE_OPTIONS = frozenset({"-c", "-e", "--eval", "-m"})  # the code is a string or a module, not a file


@dataclass
class _Walk:
    found: dict[PurePath, str] = field(default_factory=dict)
    """{relative file: kind} in the order found."""
    unknown: list[str] = field(default_factory=list)
    """Why what the line runs can't all be known (short clauses for the card)."""
    aliases: dict[PurePath, PurePath] = field(default_factory=dict)
    """{a name that was a link: the file it led to then}."""
    shadows_seen: set[PurePath] = field(default_factory=set)
    """Folders already looked through for modules that stand in for Python's own."""

    def cannot_tell(self, why: str) -> None:
        if why not in self.unknown:
            self.unknown.append(why)


@dataclass(frozen=True)
class Taken:
    """What a line runs, as it was when the card was shown."""

    contents: dict[str, tuple[bytes, int]]
    """{relative file: (its bytes, its mode)} read at that moment (those that fit MAX_TAKEN_BYTES)."""
    hashes: dict[str, str]
    """{relative file: sha256} of every file found ("" for one that couldn't be read)."""
    unknown: tuple[str, ...]
    """Why the set can't be known; empty when it can."""
    settings: frozenset[str] = frozenset()
    """Those of the files that are git's settings (git_pins.py): held to the run, never saved with a grant."""


def files_run_by(line: str, workspace: Path, _depth: int = 0) -> list[PurePath]:
    """The workspace files `line` would run (relative to the workspace), sorted, no repeats,
    with what they pull in."""
    return sorted(_walk(line, workspace, _depth).found)


def unknowns(line: str, workspace: Path) -> list[str]:
    """Why what `line` runs can't all be known ahead (empty when it can)."""
    return _walk(line, workspace).unknown


def _walk(line: str, workspace: Path, _depth: int = 0) -> _Walk:
    walk = _Walk()
    return _follow([(str(p), kind) for p, kind in _named_by(line, workspace, _depth, walk)], workspace, walk)


CODE = PurePath("the code")
"""What a card's Python code (run from standard input, in the workspace) is called on the card."""


def _walk_code(code: str, workspace: Path) -> _Walk:
    """The workspace modules Python code run in the workspace imports (its folder comes first on
    sys.path), and what they pull in."""
    walk = _Walk()
    root = Path(workspace).expanduser().resolve()
    shadows(PurePath("."), root, walk.shadows_seen, walk.cannot_tell)
    return _follow([(m, "python") for m in imported_files(code, CODE, root, walk.cannot_tell, hypothetical=False)],
                   workspace, walk)


def _follow(pending: list[tuple[str, str]], workspace: Path, walk: _Walk) -> _Walk:
    while pending:
        if len(walk.found) >= MAX_PINNED:
            walk.cannot_tell(f"it runs more files than the {MAX_PINNED} I follow")
            break
        raw, kind = pending.pop(0)
        relative = _workspace_file(raw, workspace, walk)
        if relative is None or relative in walk.found:
            continue
        walk.found[relative] = kind
        pending.extend(_pulled_in(relative, kind, workspace, walk))
    return walk


def _workspace_file(raw: str, workspace: Path, walk: _Walk) -> PurePath | None:
    try:
        where = jailed(workspace, raw, allow_root=False)
    except JailError:
        return None  # outside or unusable: not a workspace file (the line asks for other reasons)
    info = stat_beneath(where.root, where.relative)
    if info is None or not stat.S_ISREG(info.st_mode):
        return None
    named = os.path.normpath(raw) if not os.path.isabs(raw) else os.path.relpath(raw, where.root)
    if PurePath(named) != where.relative:
        # The file it shows then is pinned (under both names), but the link may point elsewhere
        # by the time it runs.
        walk.cannot_tell(f"{raw} is a link, which may point elsewhere by the time it runs")
        if not named.startswith(".."):
            walk.aliases[PurePath(named)] = where.relative
    return where.relative


def _named_by(line: str, workspace: Path, _depth: int, walk: _Walk) -> list[tuple[str, str]]:
    """(path as written, kind: "shell" | "python" | "make" | "") the line names directly."""
    named: list[tuple[str, str]] = []
    commands = simple_commands(line)
    for name, word, args, assignments, wrapper in commands_as_written(line):
        # Only the forms read all the way through keep the card's promise (understood.py).
        if (why := why_not_understood(name, word, args, assignments, wrapper)) is not None:
            walk.cannot_tell(why)
    for name, word, args in commands:
        kind = _kind(name)
        if "/" in word:
            named.append((word, "program"))
        if is_python(name):  # what Python puts first on sys.path: the script's folder, or here
            first = _operand(args, kind)
            relative_script = bool(first) and not os.path.isabs(first)
            shadows(PurePath(os.path.normpath(first)).parent if relative_script else PurePath("."),
                    Path(workspace).expanduser().resolve(), walk.shadows_seen, walk.cannot_tell,
                    os.path.basename(first) if relative_script else "")
        if name in SHELLS | {"source", "."} or is_python(name):
            operand = _operand(args, kind)
            if operand and not _readable_ahead(operand, workspace):
                walk.cannot_tell(f"it runs {operand}, which I can't read ahead")
        if "$" in word or "`" in word or name == "eval":
            walk.cannot_tell("it builds a command at run time")
        if name in ("source", ".") and any("$" in arg or "`" in arg for arg in args[:1]):
            walk.cannot_tell("it sources a file it names at run time")
        if name in INTERPRETERS or name in ("source", "."):
            for i, arg in enumerate(args):
                if arg in _CODE_OPTIONS:
                    string = args[i + 1] if i + 1 < len(args) else ""
                    if name in SHELLS and arg == "-c" and _depth < 3:
                        if "$" in string or "`" in string:
                            walk.cannot_tell("it hands a shell a command built at run time")
                        inner = _walk(string, workspace, _depth + 1)
                        named.extend((str(p), "") for p in inner.found)
                        for why in inner.unknown:
                            walk.cannot_tell(why)
                    elif name in SHELLS and arg == "-c":
                        walk.cannot_tell("it nests command strings deeper than I follow")
                    elif arg in ("-c", "-e", "--eval"):
                        walk.cannot_tell(f"{name} runs code given as a string, which may load files")
                    if kind == "python" and arg == "-m" and i + 1 < len(args):
                        # `python -m pkg.tool` runs pkg/__init__.py, then tool.py (or a package's
                        # __init__ and __main__) from the workspace.
                        module = args[i + 1].replace(".", "/")
                        parents = PurePath(module).parents
                        named.extend((f"{parent}/__init__.py", "python") for parent in reversed(parents)
                                     if str(parent) != ".")
                        named.extend((f, "python") for f in (f"{module}.py", f"{module}/__main__.py",
                                                              f"{module}/__init__.py"))
                    break
                if not arg.startswith("-"):
                    named.append((arg, kind))
                    break
        if name == "make":
            named.extend((f, "make") for f in _make_files(args))
        folder = _make_folder(args) if name == "make" else ""
        named.extend((f"{folder}{f}", "make" if name == "make" else "") for f in _IMPLICIT.get(name, ()))
    if any(name in INTERPRETERS for name, _, _ in commands):
        # `sh < run.sh`: what a shell reads on its standard input is the program it runs.
        kind = next(_kind(name) for name, _, _ in commands if name in INTERPRETERS)
        named.extend((source, kind) for source in redirect_sources(line))
        # `cat run.sh | sh`: what cat hands a shell through a pipe is the program it runs.
        named.extend((arg, kind) for name, _, args in commands if name == "cat"
                     for arg in args if not arg.startswith("-"))
    return named


def _operand(args: list[str], kind: str) -> str:
    """The script a shell, `source` or Python is given (first word that is not an option)."""
    for i, arg in enumerate(args):
        if arg in _CODE_OPTIONS or (i and args[i - 1] in _CODE_OPTIONS):
            return ""
        if not arg.startswith("-"):
            return arg
    return ""


_SYSTEM = ("/usr/", "/bin/", "/lib/", "/etc/", "/opt/")


def _readable_ahead(raw: str, workspace: Path) -> bool:
    """A script that is a file of the workspace (pinned), or of the read-only system."""
    try:
        where = jailed(workspace, raw, allow_root=False)
        info = stat_beneath(where.root, where.relative)
        return info is not None and stat.S_ISREG(info.st_mode)
    except (JailError, OSError):
        return os.path.isabs(raw) and raw.startswith(_SYSTEM) and os.path.isfile(raw)


def _kind(name: str) -> str:
    if name in SHELLS or name in ("source", "."):
        return "shell"
    if name.startswith("python"):
        return "python"
    return ""


def _pulled_in(relative: PurePath, kind: str, workspace: Path, walk: _Walk) -> list[tuple[str, str]]:
    """The workspace files a pinned script pulls in: `source`d scripts, imported modules, includes."""
    if kind not in ("shell", "python", "make", "program"):
        return []
    root = Path(workspace).expanduser().resolve()
    if kind == "program":
        kind = _by_first_line(root, relative, walk)
        if kind not in ("shell", "python"):
            return []
        if kind == "python":  # its folder is sys.path[0]
            shadows(relative.parent, root, walk.shadows_seen, walk.cannot_tell, relative.name)
    try:
        data = read_beneath(root, relative, MAX_READ_BYTES + 1, shared=True)
    except OSError:
        return []
    if len(data) > MAX_READ_BYTES:
        walk.cannot_tell(f"{relative} is longer than the {MAX_READ_BYTES >> 10} KB I read through")
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    if kind == "shell":
        # What it sources, and what it runs itself (`sh step.sh`, `./build.sh`, `python x.py`).
        return [*((arg, "shell") for name, _, args in simple_commands(text)
                  if name in ("source", ".") for arg in args[:1]),
                *_named_by(text, workspace, 1, walk)]
    if kind == "make":
        walk.cannot_tell("make runs the commands its recipes give, which I don't follow")
        # make runs in the makefile's folder (`make -C dir`): its includes are relative to it.
        return [(str(relative.parent / path), "make") for match in map(_MAKE_INCLUDE.match, text.splitlines())
                if match for path in match.group(1).split() if "$" not in path]
    loaded_beside(relative, root, walk.cannot_tell)
    return [(module, "python") for module in imported_files(text, relative, root, walk.cannot_tell)]


def _by_first_line(root: Path, relative: PurePath, walk: _Walk) -> str:
    """How a program run by its path is read: "shell" or "python" by its first line (none: a
    shell runs it), or "" when it is anything else (said on the card)."""
    try:
        head = read_beneath(root, relative, 256, shared=True)
    except OSError:
        return ""
    if not head.startswith(b"#!"):
        if head.startswith(b"\x7fELF") or b"\0" in head:
            walk.cannot_tell(f"{relative} is a compiled program, which I can't read through")
            return ""
        return "shell"
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if len(words) == 2 and words[0] == "/usr/bin/env":
        words = words[1:]
    name = os.path.basename(words[0]) if len(words) == 1 else ""
    if name in SHELLS:
        return "shell"
    if is_python(name):
        return "python"
    walk.cannot_tell(f"{relative} starts with {' '.join(words)[:60]!r}, which I don't follow")
    return ""


def take(line: str, workspace: Path) -> Taken:
    """Every workspace file `line` runs, read now (the card is being shown), with what can't be known."""
    return _taken(_walk(line, workspace), workspace)


def take_code(code: str, workspace: Path) -> Taken:
    """`take` for Python code run from standard input in the workspace: the modules it imports."""
    return _taken(_walk_code(code, workspace), workspace)


def fingerprint_code(code: str, workspace: Path) -> dict[str, str]:
    """`fingerprint` for Python code: the hashes of the workspace modules it imports."""
    return _hashes(sorted(_walk_code(code, workspace).found), workspace)


def _taken(walk: _Walk, workspace: Path) -> Taken:
    root = Path(workspace).expanduser().resolve()
    contents: dict[str, tuple[bytes, int]] = {}
    hashes: dict[str, str] = {}
    carried = 0
    for relative in sorted(walk.found):
        try:
            info = stat_beneath(root, relative)
            data = read_beneath(root, relative, MAX_HASHED_BYTES, shared=True)
        except OSError:
            hashes[str(relative)] = ""
            continue
        hashes[str(relative)] = hashlib.sha256(data).hexdigest()
        if info is not None and carried + len(data) <= MAX_TAKEN_BYTES:
            contents[str(relative)] = (data, info.st_mode)
            carried += len(data)
    for name, target in walk.aliases.items():
        if str(target) in contents:  # shown at the link's name too: whatever it leads to then
            contents[str(name)] = contents[str(target)]
    return Taken(contents, hashes, tuple(walk.unknown))


def fingerprint(line: str, workspace: Path) -> dict[str, str]:
    """{relative path: sha256} of the workspace files `line` runs; unreadable ones hash as ""."""
    return _hashes(files_run_by(line, workspace), workspace)


def _hashes(files: list[PurePath], workspace: Path) -> dict[str, str]:
    root = Path(workspace).expanduser().resolve()
    hashes = {}
    for relative in files:
        try:
            digest = hashlib.sha256(read_beneath(root, relative, MAX_HASHED_BYTES, shared=True)).hexdigest()
        except OSError:
            digest = ""
        hashes[str(relative)] = digest
    return hashes


def _make_files(args: list[str]) -> list[str]:
    files = []
    for i, arg in enumerate(args):
        if arg in ("-f", "--file", "--makefile") and i + 1 < len(args):
            files.append(args[i + 1])
        elif arg.startswith(("--file=", "--makefile=")):
            files.append(arg.split("=", 1)[1])
        elif arg.startswith("-f") and len(arg) > 2:
            files.append(arg[2:])
    return files


def _make_folder(args: list[str]) -> str:
    """The folder `make -C dir` (or --directory) works in, as a prefix ("" for the workspace)."""
    folder = ""
    for i, arg in enumerate(args):
        if arg in ("-C", "--directory") and i + 1 < len(args):
            folder = args[i + 1]
        elif arg.startswith("--directory="):
            folder = arg.split("=", 1)[1]
        elif arg.startswith("-C") and len(arg) > 2:
            folder = arg[2:]
    return f"{folder.rstrip('/')}/" if folder else ""
