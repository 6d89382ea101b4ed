"""What a declared stdio server's own program is, and which of its files the sandbox must show.

The sandbox hides the home folder (and /root, /tmp, …), where people keep their MCP servers: a
script in ~/mcp/, a virtual environment in a checkout, a tool uv or npm keeps in its cache. A
server's sandbox is shown, read-only, exactly what its program needs and nothing else of the
home: the resolved command (and the link that named it), the virtual environment it runs from
(and that environment's own interpreter), the folder of a script it is given, and for a
shebang script its interpreter the same way. Never the home itself or a folder above it, and
never one of her own folders (those stay hidden even when a server lives beside them).

The model writes the workspace without asking, so nothing there decides what else a server sees:
a link laid in the workspace, a shebang or a `pyvenv.cfg` written there may name anything. What is
reached through the workspace is shown only when it stays in the workspace (seen anyway) or is an
interpreter's own installation (a Python with its standard library, a node with its npm), and no
`pyvenv.cfg` is ever read: a virtual environment's interpreter is where its `bin/python` leads.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LAUNCHERS", "ServerProgram", "describe", "hidden_roots", "installation_of", "plain_program", "seen_line",
           "shown"]

LAUNCHERS = ("uvx", "npx")
"""Launchers whose package is found in their cache and run from there (launchers.py)."""

# What the sandbox hides besides the home (companion/safety/sandbox/sandbox.py).
_HIDDEN_SYSTEM = ("/home", "/root", "/run", "/media", "/mnt", "/var/tmp", "/tmp")
_SHEBANG_LIMIT = 256
_SCRIPTS = (".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".sh", ".rb", ".pl")


@dataclass(frozen=True)
class ServerProgram:
    """What runs in the server's sandbox and what of the hidden folders it is shown read-only."""

    argv: tuple[str, ...]
    visible: tuple[str, ...] = ()
    """Files and folders shown read-only inside (only ones the sandbox would otherwise hide)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment the launcher would have set (a virtual environment's PATH first)."""


def hidden_roots() -> list[str]:
    """The folders the sandbox hides (the home and the system's private folders)."""
    roots = [os.path.realpath(p) for p in _HIDDEN_SYSTEM]
    home = os.path.realpath(Path.home())
    if home != "/" and not _under(home, roots):
        roots.append(home)
    return roots


def plain_program(argv: Sequence[str], cwd: str, own: Iterable[Path] = ()) -> ServerProgram:
    """A command run as declared in `cwd` (the workspace): its program, its environment and its
    script, shown; of what the model may have laid in the workspace, nothing outside it."""
    found: list[str] = []
    workspace = _places(cwd)
    command = _resolve(argv[0], cwd)
    if command is not None:
        found += _program_files(command, workspace)
    for word in argv[1:]:
        # The script it is given (`python ~/mcp/server.py`, `node ~/srv/index.js`): its folder,
        # where its own modules are. Any other path among its arguments is the user's data, not
        # its program: it stays hidden (the workspace is where a server works).
        named = os.path.abspath(os.path.join(cwd, os.path.expanduser(word)))
        path = os.path.realpath(named)
        if word.startswith("-") or not word.endswith(_SCRIPTS) or not os.path.isfile(path):
            continue
        if _through(named, workspace) and not _under(path, workspace):
            continue  # a link the model may have laid: where it leads is none of the server's
        folder = os.path.dirname(path)
        # A script kept right in the home (or /tmp) is shown alone, never its folder.
        found.append(path if folder in _never(hidden_roots()) else folder)
    return ServerProgram(tuple(argv), tuple(shown(found, own)))


def shown(paths: Iterable[str], own: Iterable[Path] = ()) -> list[str]:
    """`paths` the sandbox would hide, narrowed: never the home or a folder above a hidden root,
    never one of her own folders or a folder holding one; each once, shallowest first."""
    roots = hidden_roots()
    never = _never(roots)
    mine = [os.path.realpath(p) for p in own]
    kept: list[str] = []
    for path in sorted({os.path.realpath(p) for p in paths}, key=lambda p: (p.count("/"), p)):
        if not _under(path, roots) or any(_under(folder, [path]) for folder in never):
            continue
        if any(_under(path, [m]) or _under(m, [path]) for m in mine) or _under(path, _her_python()):
            continue  # hers stay hidden; her own Python every sandbox is shown anyway
        if not _under(path, kept):
            kept.append(path)
    return kept


def _her_python() -> list[str]:
    """The Python she runs on (her venv, its base): the sandbox shows it to every command."""
    return sorted({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)})


def _never(roots: list[str]) -> list[str]:
    """Folders never shown whole: the hidden roots and the home (wherever it is)."""
    return [*roots, os.path.realpath(Path.home())]


def seen_line(visible: Sequence[str]) -> str:
    """What Settings says a running server sees of the hidden folders, in a few words."""
    if not visible:
        return "sees nothing of your home"
    return f"sees, read-only, only this of your home: {_names(visible)}"


def _names(visible: Sequence[str]) -> str:
    home = os.path.realpath(Path.home())
    return ", ".join(("~" + p[len(home):]) if _under(p, [home]) else p for p in visible)


def describe(argv: Sequence[str], cwd: str = ".") -> str:
    """What the Add-server form says a server will see, before it ever starts (one sentence)."""
    if not argv or not argv[0]:
        return ""
    launcher = os.path.basename(argv[0])
    if launcher in LAUNCHERS:
        cache = "uv's cache" if launcher == "uvx" else "npm's cache"
        return (f"It will see the system, the workspace and, read-only, its package's own folder in "
                f"{cache} and the interpreter it runs on; nothing else of your home. The first start "
                "downloads the package once, if you allow it.")
    visible = plain_program(argv, cwd).visible
    if not visible:
        return "It will see the system and the workspace; nothing of your home."
    return f"It will see the system and the workspace, and, read-only, only this of your home: {_names(visible)}."


def _resolve(command: str, cwd: str) -> str | None:
    if "/" in command:
        path = os.path.join(cwd, os.path.expanduser(command))
        return path if os.path.isfile(path) else None
    return shutil.which(command)


def _program_files(command: str, workspace: Sequence[str], chosen: bool = False, depth: int = 0) -> list[str]:
    """The command, the link that named it, its virtual environment and interpreter. `chosen`:
    the path itself comes from something the model may have written (a shebang in the workspace)."""
    named = os.path.abspath(command)
    real = os.path.realpath(command)
    if chosen or _through(named, workspace):
        # The model may have pointed it anywhere: outside the workspace, only an interpreter's
        # installation is shown (never a virtual environment or a folder it names).
        if not _under(real, workspace):
            installation = installation_of(real)
            return [installation] if installation is not None else []
        paths, inside = [p for p in (named, real) if _under(p, workspace)], workspace
    else:
        paths, inside = [named, real], ["/"]
    found = list(paths)
    for path in paths:
        venv = _venv_of(path)
        if venv is not None and _under(venv, inside):
            found += [venv, *_base_interpreter(venv)]
    installation = installation_of(real)
    if installation is not None:
        found.append(installation)
    interpreter = _shebang(real)
    if interpreter is not None and depth < 2:
        found += _program_files(interpreter, workspace, _under(real, workspace) or chosen, depth + 1)
    return found


def _venv_of(path: str) -> str | None:
    """The virtual environment whose bin/ holds `path` (a pyvenv.cfg beside that bin/)."""
    folder = os.path.dirname(os.path.dirname(path))
    return folder if os.path.isfile(os.path.join(folder, "pyvenv.cfg")) else None


def installation_of(program: str) -> str | None:
    """The installation an interpreter in a bin/ folder comes with (pyenv's Python, nvm's node):
    only one that holds a Python's standard library or node's npm, never a ~/.local."""
    folder = os.path.dirname(program)
    if os.path.basename(folder) != "bin" or not os.path.isfile(program):
        return None
    prefix = os.path.dirname(folder)
    lib = os.path.join(prefix, "lib")
    try:
        names = os.listdir(lib)
    except OSError:
        return None
    python = any(n.startswith("python3") and os.path.isfile(os.path.join(lib, n, "os.py")) for n in names)
    node = os.path.isdir(os.path.join(lib, "node_modules", "npm"))
    return prefix if python or node else None


def _base_interpreter(venv: str) -> list[str]:
    """The environment's own interpreter's installation (uv's or pyenv's live in the home): where
    its bin/python leads, when that is an installation. Never its pyvenv.cfg, whose `home` a writer
    of the environment could point at any folder."""
    for name in ("python", "python3"):
        installation = installation_of(os.path.realpath(os.path.join(venv, "bin", name)))
        if installation is not None:
            return [installation]
    return []


def _shebang(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            head = f.read(_SHEBANG_LIMIT)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        named = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
        return shutil.which(named[0]) if named else None
    return words[0]


def _places(workspace: str) -> list[str]:
    """The workspace as a path may name it: as given and with its links resolved."""
    return sorted({os.path.abspath(workspace), os.path.realpath(workspace)})


def _through(path: str, workspace: Sequence[str]) -> bool:
    """Whether `path` passes through the workspace on its way: some entry along it (a folder or a
    link, which the model may have laid) is one in the workspace."""
    parts = Path(os.path.abspath(path)).parts
    for i in range(2, len(parts) + 1):
        prefix = os.path.join(*parts[:i])
        entry = os.path.join(os.path.realpath(os.path.dirname(prefix)), os.path.basename(prefix))
        if _under(entry, workspace) and entry not in workspace:
            return True
    return False


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)
