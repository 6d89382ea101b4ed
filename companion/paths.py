"""Where her files live: user config and data dirs, shipped resources, atomic writes."""

from __future__ import annotations

import contextlib
import os
import site
import sys
import tempfile
from importlib import resources
from pathlib import Path

from platformdirs import PlatformDirs

APP_NAME = "companion"

_DIRS = PlatformDirs(APP_NAME, appauthor=False)


def default_config_dir() -> Path:
    """The user's config dir (settings.toml, personality.md, approvals.toml)."""
    return Path(_DIRS.user_config_dir)


def default_data_dir() -> Path:
    """The user's data dir (memory/, plugins/, reminders, models)."""
    return Path(_DIRS.user_data_dir)


def own_paths(config_dir: Path, data_dir: Path, *extra: Path) -> tuple[Path, ...]:
    """Every folder (and file) that is hers, which no tool may write or read.

    Her config folder (settings.toml, approvals.toml, personality.md), her data folder
    (conversations, memory, plugins, reminders, models, approvals.log), her state and cache
    folders (logs), and `extra` (a personality file kept elsewhere).
    """
    found = [Path(config_dir), Path(data_dir), Path(_DIRS.user_state_dir), Path(_DIRS.user_cache_dir),
             *map(Path, extra)]
    return tuple(dict.fromkeys(path.expanduser() for path in found))


def code_paths() -> tuple[Path, ...]:
    """Where the code she runs in-process lives: her package, her virtual environment, and
    the user's site-packages (a `.pth` file there runs at every start). A tool that could write
    these could change what she is."""
    found = [Path(__file__).resolve().parent]
    if sys.prefix != sys.base_prefix:
        found.append(Path(sys.prefix))
    if site.ENABLE_USER_SITE:
        found.append(Path(site.getusersitepackages()))
    return tuple(found)


def default_workspace() -> Path:
    """The folder her file tools are jailed to unless the settings say otherwise."""
    return Path.home() / "Companion"


def resource_dir(name: str) -> Path:
    """A shipped top-level folder (`assets` or `personality`).

    In a source checkout or an editable install they sit beside the package; a wheel
    carries them inside the package as `companion/share/<name>`.
    """
    packaged = Path(str(resources.files(__package__))) / "share" / name
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / name


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write `text` to `path` so that a crash leaves either the old or the new file, whole."""
    atomic_write_bytes(path, text.encode(encoding))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
