"""The step between the door and bwrap when she is root and something bwrap binds lies behind a folder only root may enter.

Run as a program, as root, stdlib only (`python -I -S launcher.py OP… -- BWRAP…`), by
identity.py. In a mount namespace of its own (nothing it mounts reaches the host) it:

- covers each folder nobody may enter with a small empty tmpfs (`cover PATH`) and makes the
  folders and files to attach at inside it (`dir PATH`, `file PATH`);
- attaches each detached mount it was handed (`move FD PATH`: the workspace, her interpreter,
  taken with open_tree(2)) at its own path, then closes the descriptor: once attached, a
  descriptor of it is a way back into this namespace's tree (`..` walks up from it);
- closes every other descriptor but the ones bwrap itself reads and closes (`keep FD`: its
  seccomp filter, its data files, its network pipes);
- becomes nobody (uid and gid 65534, no groups) and execs bwrap, which then builds the sandbox
  as any user's bwrap does, in a user namespace of its own.

A failure exits 125 with a sentence on stderr, before bwrap runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

__all__ = ["NOBODY", "main"]

NOBODY = 65534

_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_SLAVE = 0x2, 0x4, 0x4000, 0x80000
_MOVE_MOUNT = 429  # the common system-call table (x86-64, arm64, …)
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_AT_FDCWD = -100
_PR_SET_PDEATHSIG = 1


def _check(result: int, libc: ctypes.CDLL, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"couldn't {what}: {os.strerror(number)}")


def _attach(ops: list[str], libc: ctypes.CDLL) -> set[int]:
    """Do the ops in order; returns the descriptors to keep for bwrap."""
    keep: set[int] = set()
    i = 0
    while i < len(ops):
        op, path = ops[i], ops[i + 1]
        if op == "cover":
            _check(libc.mount(b"companion-stage", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                              b"mode=0755,size=64k"), libc, f"cover {path}")
        elif op in ("dir", "file"):
            old = os.umask(0o022)  # enterable by nobody, whatever the caller's umask
            try:
                os.makedirs(path if op == "dir" else os.path.dirname(path), exist_ok=True)
                if op == "file":
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
            finally:
                os.umask(old)
        elif op == "move":
            fd, path = int(path), ops[i + 2]
            _check(libc.syscall(_MOVE_MOUNT, fd, b"", _AT_FDCWD, os.fsencode(path), _MOVE_MOUNT_F_EMPTY_PATH),
                   libc, f"attach {path}")
            os.close(fd)
            i += 1
        elif op == "keep":
            keep.add(int(path))
        else:
            raise OSError(0, f"unknown step {op!r}")
        i += 2
    return keep


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor this process holds but stdio and `keep`."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed already
                os.close(fd)


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    ops, command = argv[:split], argv[split + 1:]
    if not command:
        print("launcher.py: no command", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getppid()
    _check(libc.unshare(_CLONE_NEWNS), libc, "make a mount namespace")
    # Receive the host's mounts, never send ours back.
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_SLAVE, None), libc, "make / a slave")
    keep = _attach(ops, libc)
    _close_all_but(keep)
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)
    # Changing who it is cleared any parent-death signal: end with the door, as bwrap's does.
    _check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), libc, "set the parent-death signal")
    if os.getppid() != parent:
        return 125  # the door is gone already
    # Python ignores these; an ignored signal stays ignored across exec (a write past the file
    # size limit would fail quietly instead of stopping the command).
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    try:
        os.execv(command[0], command)
    except OSError as exc:
        raise OSError(exc.errno, f"couldn't run {command[0]}: {exc.strerror}") from exc
    return 0  # not reached


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OSError as exc:
        print(f"The sandbox could not be attached ({exc.strerror or exc}).", file=sys.stderr)
        sys.exit(125)
