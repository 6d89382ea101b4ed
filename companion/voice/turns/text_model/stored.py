"""The words' model kept ready in her cache folder: its tokenizer and int8 weights, as loading made them.

Parsing the GGUF (its 98,000 vocabulary strings) and dequantizing and requantizing its tensors
cost ~5 s of processor in every process that loads the model: her start, each `companion listen`,
`voice` and `doctor`. The result is written once to one file per GGUF (222 MB), under the user's
cache folder ($XDG_CACHE_HOME/companion/text-turn), and later loads map it: 0.2 s of processor,
read-only pages shared between processes (a whole process's peak 302 MiB against 541).

The file is trusted only when whole and current: its header names the GGUF's path, size and
modification time and a digest of the code that converts it (so a changed model or converter
is converted again), and a CRC-32 covers everything after it (a truncated, half-written or
damaged file is ignored and written again). It is written to a temporary file and renamed into
place, so two processes starting at once each write a whole file and the last rename wins;
whoever mapped the other keeps it until they let go.

    magic (8) · header length (8) · CRC-32 of the rest (4) · header JSON · data, 64-byte aligned
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import mmap
import os
import struct
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from companion.voice.turns.text_model.llama import Llama, LlamaShape
from companion.voice.turns.text_model.q8 import Q8

__all__ = ["cache_folder", "load_model", "read_stored", "store", "stored_file"]

log = logging.getLogger(__name__)

MAGIC = b"CMPTXT01"
_PREFIX = struct.Struct("<8sQI")
ALIGN = 64
ORPHAN_AFTER_S = 600
"""A temporary file this old was left by a process that died writing it (a write takes seconds)."""
_CONVERTERS = ("llama.py", "q8.py", "vocab.py", "stored.py")
"""The modules whose code decides what is stored: a change to any converts the GGUF again."""


def cache_folder() -> Path:
    """Her cache folder's text-turn/ ($XDG_CACHE_HOME respected, as platformdirs reads it)."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("companion", appauthor=False)) / "text-turn"


def stored_file(gguf: Path, folder: Path) -> Path:
    """The one stored copy of this GGUF (by its resolved path): a changed file replaces it."""
    name = Path(gguf).resolve()
    return folder / f"{name.stem}-{hashlib.sha256(str(name).encode()).hexdigest()[:16]}.weights"


def _key(gguf: Path) -> dict:
    from importlib.metadata import version

    stat = Path(gguf).stat()
    here = Path(__file__).parent
    code = hashlib.sha256(b"".join((here / name).read_bytes() for name in _CONVERTERS)).hexdigest()
    return {"gguf": str(Path(gguf).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "code": code,
            "versions": [version(package) for package in ("gguf", "tokenizers", "numpy")]}


def load_model(gguf: Path, folder: Path | None = None):
    """(tokenizer, Llama) for the GGUF: mapped from the stored copy when it is whole and current,
    else read from the GGUF and stored for next time (a folder that can't be written only costs
    the time)."""
    folder = cache_folder() if folder is None else folder
    key = _key(gguf)
    found = read_stored(gguf, folder, key)
    if found is not None:
        return found
    from gguf import GGUFReader

    from companion.voice.turns.text_model.vocab import tokenizer_from_gguf

    reader = GGUFReader(str(gguf))
    tokenizer, model = tokenizer_from_gguf(reader), Llama.load(gguf, reader)
    del reader  # its memory map: the weights now live dequantized
    try:
        store(gguf, folder, tokenizer, model, key)
    except OSError as exc:
        log.info("the words' turn model could not be kept in %s (%s): it is read from its GGUF each time", folder, exc)
    return tokenizer, model


def read_stored(gguf: Path, folder: Path, key: dict | None = None):
    """(tokenizer, Llama) from the stored copy, or None when there is none, or it is stale,
    truncated or damaged (said at info level: it is converted again)."""
    path = stored_file(gguf, folder)
    try:
        with path.open("rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (FileNotFoundError, ValueError):  # ValueError: an empty file can't be mapped
        return None
    except OSError as exc:
        log.info("the stored words' turn model %s can't be read (%s)", path, exc)
        return None
    try:
        return _unpack(mapped, key or _key(gguf))
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        log.info("the stored words' turn model %s is not used (%s): converting the GGUF again", path, exc)
        return None


def _unpack(mapped: mmap.mmap, key: dict):
    from tokenizers import Tokenizer

    magic, length, crc = _PREFIX.unpack_from(mapped, 0)
    if magic != MAGIC:
        raise ValueError("not a stored model")
    header = json.loads(bytes(mapped[_PREFIX.size:_PREFIX.size + length]))
    if header["key"] != key:
        raise ValueError("stored from another file or by other code")
    start = _aligned(_PREFIX.size + length)
    if len(mapped) != start + header["data_bytes"]:
        raise ValueError(f"{len(mapped)} bytes where {start + header['data_bytes']} were written")
    if zlib.crc32(memoryview(mapped)[_PREFIX.size:]) != crc:
        raise ValueError("its checksum is wrong")
    arrays = {name: np.frombuffer(mapped, dtype=dtype, count=int(np.prod(shape)), offset=start + at).reshape(shape)
              for name, dtype, shape, at in header["arrays"]}  # read-only views of the map
    tensors = {name: Q8(arrays[f"{name}#q"], arrays[f"{name}#scale"]) if f"{name}#q" in arrays else arrays[name]
               for name in header["tensors"]}
    model = Llama.from_tensors(LlamaShape(**header["shape"]), tensors)
    return Tokenizer.from_str(header["tokenizer"]), model


def store(gguf: Path, folder: Path, tokenizer, model: Llama, key: dict | None = None) -> Path:
    """Write the stored copy of the GGUF's tokenizer and model (atomically: a temporary file renamed)."""
    arrays: list[tuple[str, np.ndarray]] = []
    for name, weights in model.tensors().items():
        if isinstance(weights, Q8):
            arrays += [(f"{name}#q", weights.q), (f"{name}#scale", weights.scale)]
        else:
            arrays.append((name, weights))
    layout, size = [], 0
    for name, array in arrays:
        layout.append([name, array.dtype.str, list(array.shape), size])  # from the data's start
        size = _aligned(size + array.nbytes)
    header = json.dumps({"key": key or _key(gguf), "shape": dataclasses.asdict(model.shape),
                         "tensors": list(model.tensors()), "tokenizer": tokenizer.to_str(), "arrays": layout,
                         "data_bytes": size}).encode()
    start = _aligned(_PREFIX.size + len(header))
    folder.mkdir(parents=True, exist_ok=True)
    target = stored_file(gguf, folder)
    _remove_orphans(folder, target)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            crc = 0

            def put(chunk) -> None:
                nonlocal crc
                out.write(chunk)
                crc = zlib.crc32(chunk, crc)

            out.write(_PREFIX.pack(MAGIC, len(header), 0))
            put(header)
            for (_name, array), (*_, at) in zip(arrays, layout, strict=True):
                put(bytes(start + at - out.tell()))
                put(np.ascontiguousarray(array).data.cast("B"))
            put(bytes(start + size - out.tell()))
            out.seek(0)
            out.write(_PREFIX.pack(MAGIC, len(header), crc))  # last: until then the file reads as damaged
        os.replace(temporary, target)  # whole, or not there: a reader never sees it half-written
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return target


def _aligned(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


def _remove_orphans(folder: Path, target: Path) -> None:
    """Temporary files of this copy left by a process that died writing them (~220 MB each)."""
    for orphan in folder.glob(f".{target.name}.*.tmp"):
        with contextlib.suppress(OSError):
            if time.time() - orphan.stat().st_mtime > ORPHAN_AFTER_S:
                orphan.unlink()
