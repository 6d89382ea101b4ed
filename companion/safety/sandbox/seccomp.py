"""The seccomp filter every sandboxed process runs under: no setuid or setgid file can be made.

Files a sandboxed command creates in the workspace land on the real disk, owned by whoever
runs her; when that is root, a setuid copy of a shell left there would be a root shell for
anyone on the machine. Mounts can't stop the chmod (nosuid only stops honouring the bit), so
a filter refuses, with EPERM, every system call that would set S_ISUID or S_ISGID: chmod,
fchmod, fchmodat, fchmodat2, and open/openat/creat/mknod/mknodat creating a file with those
bits. openat2 (its mode sits in a struct the filter can't read) and io_uring (which opens
files without system calls) answer ENOSYS, so programs fall back to the calls that are
checked; so does clone3 (whose flags the filter can't read either: unshare and clone making a
user namespace are refused, so no nested user namespace can be made); so do the kernel keyrings (keyctl, add_key, request_key: not namespaced, so root's
own keys outside), userfaultfd, perf_event_open and bpf. A command that may only read gets
no UNIX sockets either (`filter_program(read_only=True)`). System calls of another architecture (32-bit calls on a 64-bit machine) end the
process, so they can't slip past the rules.

Built with pyseccomp (ctypes over Debian's libseccomp2, the library systemd and Flatpak use):
libseccomp knows each architecture's call numbers and compiles the argument checks, which a
hand-written BPF program would have to get right for every architecture by hand.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import stat
import tempfile

__all__ = ["SeccompUnavailable", "filter_fd", "filter_program"]

_SET_ID = (stat.S_ISUID, stat.S_ISGID)
_O_TMPFILE_BIT = 0o20000000  # __O_TMPFILE without O_DIRECTORY: what O_TMPFILE adds on Linux

# (system call, index of the mode argument, index of the open flags or None)
_MODE_CALLS = (
    ("chmod", 1, None), ("fchmod", 1, None), ("fchmodat", 2, None), ("fchmodat2", 2, None),
    ("creat", 1, None), ("mknod", 1, None), ("mknodat", 2, None),
    ("open", 2, 1), ("openat", 3, 2),
)
_NOT_HERE = ("openat2", "io_uring_setup", "io_uring_enter", "io_uring_register",
             # clone3's flags sit in a struct the filter can't read: programs fall back to clone.
             "clone3",
             # The kernel keyrings are keyed by the user outside (root's, when she is root), and
             # these are favourite tools of kernel exploits; Docker's default profile refuses them too.
             "keyctl", "add_key", "request_key", "userfaultfd", "perf_event_open", "bpf")
# Newer than some libseccomp releases; these numbers are the same on every architecture that
# uses the kernel's shared system-call table (x86-64, arm64, riscv64, …).
_NUMBERS = {"fchmodat2": 452, "openat2": 437, "io_uring_setup": 425, "io_uring_enter": 426,
            "io_uring_register": 427, "clone3": 435, "memfd_secret": 447}
_CLONE_NEWUSER = 0x10000000
_SHARED_ANONYMOUS = 0x01 | 0x20  # MAP_SHARED | MAP_ANONYMOUS (MAP_SHARED_VALIDATE has the bit too)
# Memory no rlimit counts: shared memory, and System V message queues (16 KB each, 32000 in
# the call's IPC namespace: 500 MB measured) and semaphore sets (2 MB each, 32000 of them).
_UNCOUNTED = ("memfd_create", "memfd_secret", "shmget", "msgget", "semget")
# Calls whose first argument holds CLONE_NEWUSER when they would make a user namespace.
_NEW_USER_NAMESPACE = ("unshare", "clone")


class SeccompUnavailable(RuntimeError):
    """libseccomp (or pyseccomp) is missing or could not build the filter."""


@functools.cache
def filter_program(read_only: bool = False, memory_counted: bool = True) -> bytes:
    """The compiled BPF program (what bwrap's --seccomp reads), built once per process.

    `memory_counted`: a cgroup holds the call's memory. Without one, RLIMIT_DATA is all that
    holds it, and it counts private memory only: memory shared with nobody but itself would go
    uncounted (measured as uid 65534 under a 256 MB limit: 512 MB held each way). So then a
    shared anonymous mapping answers ENOMEM, and memfd_create and System V shared memory,
    message queues and semaphores (shmget, msgget, semget) answer ENOSYS; /dev/shm and /tmp
    are tmpfs of a fixed size, and /dev/zero can't be mapped (sandbox.py).

    `read_only`: for a command that may only read (the workspace is mounted read-only), also
    refuse to make a UNIX socket: a socket file's mode, not the mount, decides who may
    connect, so a read-only mount still lets a process talk to whatever listens on a socket in
    the workspace (a gpg-agent or ssh-agent in a home workspace, a language server), which can
    change things for it. socketpair(2) stays: it only connects a process to itself."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:  # OSError: libseccomp.so.2 itself is missing
        raise SeccompUnavailable(f"the seccomp library is missing ({exc})") from exc
    try:
        rules = sc.SyscallFilter(sc.ALLOW)
        refuse = sc.ERRNO(errno.EPERM)
        for call, mode_arg, flags_arg in _MODE_CALLS:
            name = _number(sc, call)
            if name is None:
                continue
            for bit in _SET_ID:
                mode = sc.Arg(mode_arg, sc.MASKED_EQ, bit, bit)
                if flags_arg is None:
                    rules.add_rule(refuse, name, mode)
                    continue
                # open's mode only counts when it creates a file (O_CREAT or O_TMPFILE).
                for creating in (os.O_CREAT, _O_TMPFILE_BIT):
                    rules.add_rule(refuse, name, sc.Arg(flags_arg, sc.MASKED_EQ, creating, creating), mode)
        for call in _NOT_HERE:
            name = _number(sc, call)
            if name is not None:
                rules.add_rule(sc.ERRNO(errno.ENOSYS), name)
        for call in _NEW_USER_NAMESPACE:
            # No nested user namespace, also where bwrap's --disable-userns can't be had (a
            # bwrap before 0.8).
            rules.add_rule(refuse, call, sc.Arg(0, sc.MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER))
        if not memory_counted:
            rules.add_rule(sc.ERRNO(errno.ENOMEM), "mmap", sc.Arg(3, sc.MASKED_EQ, _SHARED_ANONYMOUS, _SHARED_ANONYMOUS))
            for call in _UNCOUNTED:
                name = _number(sc, call)
                if name is not None:
                    rules.add_rule(sc.ERRNO(errno.ENOSYS), name)
        if read_only:
            rules.add_rule(sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.EQ, socket.AF_UNIX))
        with tempfile.TemporaryFile() as out:
            rules.export_bpf(out)
            out.seek(0)
            return out.read()
    except (OSError, RuntimeError, ValueError) as exc:
        raise SeccompUnavailable(f"the seccomp filter could not be built ({exc})") from exc


def filter_fd(read_only: bool = False, memory_counted: bool = True) -> int:
    """A fresh file descriptor holding the program, positioned at its start, for bwrap to read."""
    fd = os.memfd_create("companion-seccomp", os.MFD_CLOEXEC)
    os.write(fd, filter_program(read_only, memory_counted))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _number(sc: object, name: str) -> int | None:
    """The call's number here, or None when this architecture has no such call (`open` on arm64)."""
    number = sc.resolve_syscall(sc.system_arch(), name)
    if number >= 0:
        return number
    return _NUMBERS.get(name)  # libseccomp older than the call; negative means "unknown here"
