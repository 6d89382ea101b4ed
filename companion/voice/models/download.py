"""Downloading model files: streamed to a .part file and renamed, hashed on the way, with progress.

A folder downloaded whole records its files' SHA-256 (sha256.json), and later starts check
that record instead of fetching again. Which files to fetch, and from where, is files.py's.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from companion.errors import CompanionError, Stage
from companion.voice.models.checksums import verify_files

__all__ = ["Progress", "download_all", "download_file", "progress_bar"]

Progress = Callable[[str, int, int | None], None]
"""Called as (file name, bytes so far, total bytes or None) while a model downloads."""


def download_all(folder: Path, files: list[tuple[str, str]], progress: Progress | None, *, what: str) -> None:
    """Download `files` ([(name, url)]) into `folder` and record their hashes; a folder with
    its record is checked instead of fetched again."""
    manifest = folder / "sha256.json"
    if manifest.is_file():
        # A finished download recorded its hashes: check them instead of fetching again.
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
        verify_files(folder, recorded, what=f"downloaded {what}",
                     fix=f"Delete {folder} and I'll download it again.")
        return
    folder.mkdir(parents=True, exist_ok=True)
    hashes = {name: download_file(url, folder / name, progress) for name, url in files}
    from companion.paths import atomic_write_text

    atomic_write_text(manifest, json.dumps(hashes, indent=1))


def download_file(url: str, dest: Path, progress: Progress | None = None) -> str:
    """Stream `url` to `dest` (via a .part file), reporting progress; returns the SHA-256."""
    import httpx

    part = dest.with_name(dest.name + ".part")
    digest = hashlib.sha256()
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=httpx.Timeout(30.0)) as response:
            if response.status_code != 200:
                raise CompanionError(
                    "download_failed", f"I couldn't download {dest.name}: the server said {response.status_code}.",
                    stage=Stage.HEARING if "whisper" in url else Stage.SPEAKING,
                )
            total = int(response.headers["content-length"]) if "content-length" in response.headers else None
            # Hugging Face names a large file's SHA-256 in this header; check it when given.
            expected = response.headers.get("x-linked-etag", "").strip('"')
            done = 0
            with part.open("wb") as handle:
                for block in response.iter_bytes(1 << 16):
                    handle.write(block)
                    digest.update(block)
                    done += len(block)
                    if progress:
                        progress(dest.name, done, total)
    except httpx.HTTPError as exc:
        part.unlink(missing_ok=True)
        raise CompanionError(
            "download_failed", f"I couldn't download {dest.name} ({exc.__class__.__name__}). "
            "Check the network, or install the offline model pack.",
            stage=Stage.HEARING if "whisper" in url else Stage.SPEAKING,
        ) from exc
    actual = digest.hexdigest()
    if re.fullmatch(r"[0-9a-f]{64}", expected) and expected != actual:
        part.unlink(missing_ok=True)
        raise CompanionError(
            "model_corrupt", f"The download of {dest.name} arrived damaged; try again.",
            stage=Stage.HEARING if "whisper" in url else Stage.SPEAKING,
        )
    os.replace(part, dest)
    return actual


def progress_bar(stream=None) -> Progress:
    """A one-line text progress bar for the terminal (stderr)."""
    import sys

    out = stream or sys.stderr

    def show(name: str, done: int, total: int | None) -> None:
        if total:
            filled = int(30 * done / total)
            out.write(f"\rdownloading {name} [{'#' * filled}{'.' * (30 - filled)}] {done * 100 // total:3d}%")
        else:
            out.write(f"\rdownloading {name} {done / 1e6:.1f} MB")
        if total and done >= total:
            out.write("\n")
        out.flush()

    return show
