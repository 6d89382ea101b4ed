"""Which workspace files a command line runs, and their content hashes.

"Always" for `sh run.sh` means "this run.sh", not whatever run.sh becomes: a saved line grant
keeps the SHA-256 of every workspace file the line runs, and a changed (or new, or missing)
file makes the line ask again. Files a line runs: a command named by path (`./run.sh`), the
script an interpreter or `source` is given (`python tool.py`, `sh run.sh`, also inside
`bash -c "…"`), and the files a build tool reads implicitly (Makefile, package.json,
justfile). A family grant never covers a line that runs a workspace file.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path, PurePath

from companion.safety.beneath import read_beneath, stat_beneath
from companion.safety.danger import INTERPRETERS, SHELLS, simple_commands
from companion.safety.jail import JailError, jailed

__all__ = ["files_run_by", "fingerprint"]

MAX_HASHED_BYTES = 64 * 1024 * 1024
_IMPLICIT = {
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "npm": ("package.json",), "pnpm": ("package.json",), "yarn": ("package.json",),
    "just": ("justfile", "Justfile", ".justfile"),
}
_CODE_OPTIONS = frozenset({"-c", "-e", "--eval", "-m"})  # the code is a string or a module, not a file


def files_run_by(line: str, workspace: Path, _depth: int = 0) -> list[PurePath]:
    """The workspace files `line` would run (relative to the workspace), sorted, no repeats."""
    named: list[str] = []
    for name, word, args in simple_commands(line):
        if "/" in word:
            named.append(word)
        if name in INTERPRETERS or name in ("source", "."):
            for i, arg in enumerate(args):
                if arg in _CODE_OPTIONS:
                    if name in SHELLS and arg == "-c" and i + 1 < len(args) and _depth < 3:
                        named.extend(str(p) for p in files_run_by(args[i + 1], workspace, _depth + 1))
                    break
                if not arg.startswith("-"):
                    named.append(arg)
                    break
        if name == "make":
            named.extend(_make_files(args))
        named.extend(_IMPLICIT.get(name, ()))
    found: set[PurePath] = set()
    for raw in named:
        try:
            where = jailed(workspace, raw, allow_root=False)
        except JailError:
            continue  # outside or unusable: not a workspace file (the line asks for other reasons)
        info = stat_beneath(where.root, where.relative)
        if info is not None and stat.S_ISREG(info.st_mode):
            found.add(where.relative)
    return sorted(found)


def fingerprint(line: str, workspace: Path) -> dict[str, str]:
    """{relative path: sha256} of the workspace files `line` runs; unreadable ones hash as ""."""
    root = Path(workspace).expanduser().resolve()
    hashes = {}
    for relative in files_run_by(line, workspace):
        try:
            digest = hashlib.sha256(read_beneath(root, relative, MAX_HASHED_BYTES)).hexdigest()
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
