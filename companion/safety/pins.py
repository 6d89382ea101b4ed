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
"""

from __future__ import annotations

import ast
import hashlib
import re
import stat
from pathlib import Path, PurePath

from companion.safety.beneath import read_beneath, stat_beneath
from companion.safety.danger import INTERPRETERS, SHELLS, redirect_sources, simple_commands
from companion.safety.jail import JailError, jailed

__all__ = ["files_run_by", "fingerprint"]

MAX_HASHED_BYTES = 64 * 1024 * 1024
MAX_READ_BYTES = 1024 * 1024
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


def files_run_by(line: str, workspace: Path, _depth: int = 0) -> list[PurePath]:
    """The workspace files `line` would run (relative to the workspace), sorted, no repeats,
    with what they pull in."""
    found: dict[PurePath, str] = {}
    pending = [(str(p), kind) for p, kind in _named_by(line, workspace, _depth)]
    while pending and len(found) < MAX_PINNED:
        raw, kind = pending.pop(0)
        relative = _workspace_file(raw, workspace)
        if relative is None or relative in found:
            continue
        found[relative] = kind
        pending.extend(_pulled_in(relative, kind, workspace))
    return sorted(found)


def _workspace_file(raw: str, workspace: Path) -> PurePath | None:
    try:
        where = jailed(workspace, raw, allow_root=False)
    except JailError:
        return None  # outside or unusable: not a workspace file (the line asks for other reasons)
    info = stat_beneath(where.root, where.relative)
    return where.relative if info is not None and stat.S_ISREG(info.st_mode) else None


def _named_by(line: str, workspace: Path, _depth: int) -> list[tuple[str, str]]:
    """(path as written, kind: "shell" | "python" | "make" | "") the line names directly."""
    named: list[tuple[str, str]] = []
    commands = simple_commands(line)
    for name, word, args in commands:
        kind = _kind(name)
        if "/" in word:
            named.append((word, kind))
        if name in INTERPRETERS or name in ("source", "."):
            for i, arg in enumerate(args):
                if arg in _CODE_OPTIONS:
                    if name in SHELLS and arg == "-c" and i + 1 < len(args) and _depth < 3:
                        named.extend((str(p), "") for p in files_run_by(args[i + 1], workspace, _depth + 1))
                    if kind == "python" and arg == "-m" and i + 1 < len(args):
                        # `python -m tool` runs tool.py (or a package's __main__) from the workspace.
                        module = args[i + 1].replace(".", "/")
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


def _kind(name: str) -> str:
    if name in SHELLS or name in ("source", "."):
        return "shell"
    if name.startswith("python"):
        return "python"
    return ""


def _pulled_in(relative: PurePath, kind: str, workspace: Path) -> list[tuple[str, str]]:
    """The workspace files a pinned script pulls in: `source`d scripts, imported modules, includes."""
    if kind not in ("shell", "python", "make"):
        return []
    root = Path(workspace).expanduser().resolve()
    try:
        text = read_beneath(root, relative, MAX_READ_BYTES, shared=True).decode("utf-8", errors="replace")
    except OSError:
        return []
    if kind == "shell":
        # What it sources, and what it runs itself (`sh step.sh`, `./build.sh`, `python x.py`).
        return [*((arg, "shell") for name, _, args in simple_commands(text)
                  if name in ("source", ".") for arg in args[:1]),
                *_named_by(text, workspace, 3)]
    if kind == "make":
        # make runs in the makefile's folder (`make -C dir`): its includes are relative to it.
        return [(str(relative.parent / path), "make") for match in map(_MAKE_INCLUDE.match, text.splitlines())
                if match for path in match.group(1).split() if "$" not in path]
    return [(str(relative.parent / module), "python") for module in _python_imports(text)]


def _python_imports(text: str) -> list[str]:
    """Files a script's imports could load from its own folder (sys.path[0])."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    files: list[str] = []
    for name in names:
        path = name.replace(".", "/")
        files += [f"{path}.py", f"{path}/__init__.py"]
    return files


def fingerprint(line: str, workspace: Path) -> dict[str, str]:
    """{relative path: sha256} of the workspace files `line` runs; unreadable ones hash as ""."""
    root = Path(workspace).expanduser().resolve()
    hashes = {}
    for relative in files_run_by(line, workspace):
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
