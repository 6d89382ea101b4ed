"""A read-only run writes no file outside its scratch folders, FIFOs and sockets in the workspace included.

A read-only mount stops a command from changing files, but not from writing into a FIFO (or a
device) that lives there: opening a FIFO for writing changes nothing on disk, and a program
of the user's reading it takes whatever comes. So a command that may only read runs under a
Landlock ruleset (Linux 5.13 and later, where the kernel has it): writing to any file is
refused but beneath its private /tmp, /dev and /proc. Its output pipes stay open to it, but
can't be opened again by name (`> /dev/stdout`): Landlock has no rule for a pipe. Device nodes
of the workspace are unusable anyway (every mount is nodev). Landlock allows by folder, whatever is mounted below it: for a workspace inside /tmp
the scratch folder is /dev/shm instead (TMPDIR), and /tmp is not writable. Where Landlock isn't
there the command runs as before.

Run as a program inside the sandbox (`python -I -S landlock.py [--writable DIR]… -- COMMAND…`),
stdlib only: a ruleset binds the process that makes it and everything it starts, and must be
made after bwrap has built the sandbox (a Landlock-restricted process may not mount).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["SCRATCH", "abi", "argv_for", "helper", "main", "writable_folders"]

SCRATCH = "/tmp"
"""The read-only run's scratch folder, unless the workspace is inside it (then /dev/shm)."""

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the common system-call table
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_PATH_BENEATH = 1
_WRITE_FILE, _TRUNCATE = 1 << 1, 1 << 14
_O_PATH = 0o10000000


class _Ruleset(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # the kernel's struct landlock_path_beneath_attr is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def writable_folders(workspace: str) -> list[str]:
    """Where a read-only run in `workspace` may still write files: its scratch (/tmp, when
    the workspace isn't inside it), /dev (null, the terminal, /dev/shm) and /proc/self."""
    inside = workspace == SCRATCH or workspace.startswith(SCRATCH + "/")
    return [*([] if inside else [SCRATCH]), "/dev", "/proc"]


def helper() -> str:
    """This file, which the sandbox runs first (so it is shown there, read-only, wherever it lives)."""
    return os.path.abspath(__file__)


def argv_for(python: str, writable: list[str]) -> list[str]:
    """The words that put a command under the ruleset (to go right before it)."""
    return [python, "-I", "-S", helper(), *(w for folder in writable for w in ("--writable", folder)),
            "--"]


def abi() -> int:
    """The Landlock version this kernel offers (1 came with Linux 5.13), 0 when it has none
    (an older kernel, Landlock left out of the boot's `lsm=` list, not Linux)."""
    try:
        version = ctypes.CDLL(None, use_errno=True).syscall(_CREATE_RULESET, None, 0, _VERSION)
    except (AttributeError, OSError):  # no syscall(2) to call: not Linux
        return 0
    return max(version, 0)


def _restrict(writable: list[str]) -> None:
    version = abi()
    if version < 1:
        return  # no Landlock in this kernel: the mounts alone hold the run
    libc = ctypes.CDLL(None, use_errno=True)
    handled = _WRITE_FILE | (_TRUNCATE if version >= 3 else 0)
    ruleset = _Ruleset(handled)
    fd = libc.syscall(_CREATE_RULESET, ctypes.byref(ruleset), ctypes.sizeof(ruleset), 0)
    if fd < 0:
        _fail(libc, "create a Landlock ruleset")
    try:
        for folder in writable:
            try:
                parent = os.open(folder, _O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = _PathBeneath(handled, parent)
                if libc.syscall(_ADD_RULE, fd, _PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                    _fail(libc, f"allow writing beneath {folder}")
            finally:
                os.close(parent)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS (bwrap has set it already)
            _fail(libc, "set no_new_privs")
        if libc.syscall(_RESTRICT_SELF, fd, 0) != 0:
            _fail(libc, "apply the Landlock ruleset")
    finally:
        os.close(fd)


def _fail(libc: ctypes.CDLL, what: str) -> None:
    number = ctypes.get_errno()
    raise OSError(number, f"couldn't {what}: {os.strerror(number)}")


def main(argv: list[str]) -> int:
    """Restrict this process to writing beneath the `--writable` folders, then become the
    command after `--`."""
    split = argv.index("--") if "--" in argv else len(argv)
    options, command = argv[:split], argv[split + 1:]
    writable = [options[i + 1] for i, word in enumerate(options[:-1]) if word == "--writable"]
    if not command:
        print("landlock.py: no command", file=sys.stderr)
        return 2
    _restrict(writable)
    # Python ignores these, and an ignored signal stays ignored across exec: `yes | head` would
    # end with "Broken pipe", a write past the file size limit would fail instead of stopping.
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OSError as exc:
        print(f"The read-only sandbox could not be set up ({exc.strerror or exc}).", file=sys.stderr)
        sys.exit(125)
