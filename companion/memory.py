"""Handing memory back to the system: glibc's allocator keeps what was freed.

Loading her models reads each file, builds its tensors and frees the file's bytes; synthesis
and transcription allocate and free large buffers on worker threads. glibc keeps such freed
memory in the process, in one heap arena per thread that allocated (up to 8 per core), so a
process that listens all day holds on to the peaks of its start-up. Fewer arenas and a trim
once the models are warm return it (~100 MB measured on her voice). Elsewhere than glibc
both calls do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger(__name__)

M_ARENA_MAX = -8
M_MMAP_THRESHOLD = -3
"""mallopt's parameter numbers (malloc.h)."""
HEAP_ARENAS = 2
"""One for the event loop and one shared by the worker threads: they rarely allocate at once."""
MMAP_FROM = 256 * 1024
"""Blocks this big get pages of their own, handed back when freed (audio, tensors). glibc
raises this bound by itself after each such free (up to 32 MB), after which big buffers come
from the heap and leave it fragmented; a fixed bound stops that."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if libc is None or not hasattr(libc, "malloc_trim") or not hasattr(libc, "mallopt"):
        return None  # not glibc (musl, macOS)
    return libc


def limit_heap_arenas() -> None:
    """Threads started from now on share HEAP_ARENAS arenas, and big blocks are given back
    when freed (call it first thing, before any thread starts)."""
    libc = _libc()
    if libc is None:
        return
    for parameter, value in ((M_ARENA_MAX, HEAP_ARENAS), (M_MMAP_THRESHOLD, MMAP_FROM)):
        if not libc.mallopt(parameter, value):
            log.debug("mallopt(%d, %d) was refused", parameter, value)


def release_free_memory() -> None:
    """Give memory freed so far back to the system (after start-up work, off the event loop:
    it walks the whole heap, 2-3 ms)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
