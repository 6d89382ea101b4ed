"""What a Python script on a card may load from the workspace besides itself (pins.py's Python part).

Python puts the script's folder first on sys.path, so its imports of workspace modules run files
the card must pin too (`imported_files`), a file there named like a module Python has elsewhere
loads instead of it (`shadows`), and a compiled copy or an extension module beside a pinned
module may load instead of the source shown (`loaded_beside`). What can't be known is said
through `cannot_tell`, a short clause for the card.
"""

from __future__ import annotations

import ast
import importlib.machinery
import os
import sys
from collections.abc import Callable
from pathlib import Path, PurePath

__all__ = ["imported_files", "loaded_beside", "shadows"]

MAX_FOLDER_NAMES = 200
"""How many names of one folder are looked at for modules that stand in for Python's own."""


def shadows(folder: PurePath, root: Path, seen: set[PurePath], cannot_tell: Callable[[str], None],
            script: str = "") -> None:
    """Python puts the script's folder (or, for `-m` and code, the working folder) first on
    sys.path: a file there named like a module Python finds elsewhere (its standard library, an
    installed package) loads instead of it, for any import by anything, shown or not. `seen`:
    the folders already looked through."""
    if folder in seen:
        return
    seen.add(folder)
    for name in sorted(_names(root / folder))[:MAX_FOLDER_NAMES]:
        if name == script:  # the script itself runs as __main__
            continue
        module = name[:-3] if name.endswith(".py") else name if (root / folder / name / "__init__.py").is_file() else ""
        if module and module.isidentifier() and _found_elsewhere(module):
            cannot_tell(f"{folder / name} has the name of a module Python has elsewhere, and loads instead of it")


def _found_elsewhere(module: str) -> bool:
    if module in sys.stdlib_module_names:
        return True
    try:
        return importlib.machinery.PathFinder.find_spec(module, [p for p in sys.path if p]) is not None
    except (ImportError, ValueError, OSError):
        return False


def loaded_beside(relative: PurePath, root: Path, cannot_tell: Callable[[str], None]) -> None:
    """What Python may load instead of a pinned module: a compiled copy in __pycache__, a
    sourceless .pyc, or an extension module of the same name beside it."""
    folder = root / relative.parent
    stem = relative.stem
    cache = folder / "__pycache__"
    if any(name.startswith(f"{stem}.") for name in _names(cache)):
        cannot_tell(f"{cache.relative_to(root)} holds compiled code Python may run instead of {relative}")
    for name in _names(folder):
        if name.startswith(f"{stem}.") and name != relative.name:
            cannot_tell(f"{relative.parent / name} may load instead of {relative}")


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


_DYNAMIC = ("importlib", "__import__", "runpy", "exec(", "eval(", "compile(", "imp.load")


def imported_files(text: str, relative: PurePath, root: Path, cannot_tell: Callable[[str], None], *,
                   hypothetical: bool = True) -> list[str]:
    """Files (relative to the workspace) a script's imports could load from its own folder
    (sys.path[0]) or, for `from . import x`, from its package. `hypothetical`: say that a file
    put there later could stand in for a module found elsewhere (for what a grant may run again)."""
    if hypothetical and any(sign in text for sign in _DYNAMIC):
        cannot_tell(f"{relative} decides at run time what it imports or runs")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[tuple[PurePath, str]] = []
    here = relative.parent
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend((here, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append((here, node.module))
            names.extend((here, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            # `from . import x` / `from ..pkg import y`: relative to the file's own package.
            base = here
            for _ in range(node.level - 1):
                base = base.parent
            prefix = f"{node.module}." if node.module else ""
            if node.module:
                names.append((base, node.module))
            names.extend((base, f"{prefix}{alias.name}") for alias in node.names)
    files: list[str] = []
    for base, name in names:
        path = (base / name.replace(".", "/")).as_posix()
        files += [f"{path}.py", f"{path}/__init__.py"]
    # A module found elsewhere (the standard library) is taken from the script's folder first
    # once a file of its name appears there: no content shown ahead can cover that.
    for base, name in names:
        top = base / name.split(".")[0]
        if hypothetical and base == here and not (root / f"{top}.py").exists() and not (root / top).is_dir():
            cannot_tell(f"a file put beside {relative} could stand in for a module it imports")
            break
    return files
