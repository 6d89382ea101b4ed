"""Who a sandboxed command is on the host: a user that owns nothing there, also when she is root.

bwrap's own user namespace, started by root, maps the command's user to root outside
(`/proc/self/uid_map` reads `65534 0 1`): no capabilities, but the owner bits of every file of
root's still apply (/etc/shadow opens). So when she is root:

- bwrap itself runs as 65534 (uid, gid, no groups) and makes the call's user namespace as any
  user's bwrap does, one per call (RLIMIT_NPROC counts a user's processes per user namespace,
  so calls don't share, or exhaust, one count); nothing of root's is mapped in it, so no power
  a process holds there ever applies to root's files. It hands the command no descriptor of
  root's: it gets only what it reads and closes (its filter, its data, its network pipes);
- the workspace is shown through an idmapped mount (Linux 5.12; ext4, xfs, btrfs, tmpfs from
  6.3, …) on which its owner appears as 65534: the command reads and writes it as its own, and
  what it creates lands on disk as the owner's;
- the launcher (launcher.py, as root, in a mount namespace of its own) attaches that copy of
  the workspace at the workspace's path. bwrap, being 65534, can't walk through a folder only
  root may enter (/root, /tmp/pytest-of-root, a `mktemp -d` folder): the launcher first covers
  each such folder above what bwrap binds with an empty tmpfs and attaches there, at their own
  paths, copies of the mounts bwrap binds from it (her interpreter, her checkout), taken
  beforehand with open_tree(2). It closes their descriptors (`..` from one walks its tree) and
  becomes 65534 before it runs bwrap. Nothing else under such a folder is shown, which changes
  nothing: the command could not have entered it;
- supplementary groups are dropped (root's group would count).

Where an idmapped mount can't be made (an older kernel, a filesystem without them, no util-linux)
the old mapping stays (root outside, without capabilities) and `Identity.note` says so. When she
is not root, the command is her own user, as bwrap maps it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import pwd
import shutil
import stat
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from companion.safety.sandbox import launcher

__all__ = ["NO_IDMAP_NOTE", "SANDBOX_UID", "Identity", "bind_sources", "for_workspace", "note_for", "what_stops"]

SANDBOX_UID = 65534
"""Who a command is when she runs as root: "nobody", inside and outside."""

NO_IDMAP_NOTE = ("Commands run as root outside the sandbox (without its powers) because this system "
                 "can't show the workspace to an unprivileged user (it needs Linux 5.12 or later and "
                 "a filesystem with idmapped mounts).")

# System call numbers shared by every architecture on the kernel's common table (x86-64, arm64, …).
_OPEN_TREE, _MOUNT_SETATTR = 428, 442
_OPEN_TREE_CLONE, _AT_EMPTY_PATH, _AT_SYMLINK_NOFOLLOW = 1, 0x1000, 0x100
_ATTR_RDONLY, _ATTR_NOSUID, _ATTR_NODEV, _ATTR_IDMAP = 0x1, 0x2, 0x4, 0x100000
# bwrap options that take two values, the first a path to bind from.
_BINDS = frozenset({"--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--dev-bind-try"})
_TWO = _BINDS | {"--ro-bind-data", "--bind-data", "--file", "--symlink", "--chmod", "--setenv"}
_ONE = frozenset({"--dev", "--proc", "--tmpfs", "--mqueue", "--dir", "--remount-ro", "--chdir", "--size",
                  "--perms", "--uid", "--gid", "--hostname", "--info-fd", "--block-fd", "--seccomp",
                  "--add-seccomp-fd", "--json-status-fd", "--userns", "--userns2", "--pidns",
                  "--cap-add", "--cap-drop", "--unsetenv", "--lock-file", "--sync-fd", "--exec-label",
                  "--file-label", "--argv0", "--userns-block-fd"})


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


@dataclass
class Identity:
    """How one call's sandbox is someone: `user_args` for bwrap, `launch()` around its argv."""

    uid: int
    """The command's uid on the host."""
    user_args: list[str]
    note: str = ""
    """A sentence when the command is less unprivileged than it should be (root outside)."""
    _workspace: str = ""
    _tree: int | None = None
    """The workspace as its owner-is-65534 copy, still to be attached (a descriptor)."""
    _launcher: bool = False

    def reachable(self, path: str) -> bool:
        """Whether bwrap, building the sandbox as this user, can walk to `path`."""
        # The workspace is attached where bwrap can reach it, whatever is above it.
        return not self._launcher or self._tree_inside(path) or _first_closed(path, self._workspace) is None

    def launch(self, argv: list[str], fds: list[int]) -> list[str]:
        """`argv` (bwrap's) started as this user, through the launcher when something it binds
        lies behind a folder the user can't enter; the descriptors the launcher attaches are
        added to `fds` (whoever starts it closes them), and it closes them before bwrap runs."""
        if not self._launcher:
            return argv
        keep = list(fds)  # what bwrap itself reads and closes: its filter, its data, its pipes
        moves: list[tuple[str, int, bool]] = []
        if self._tree is not None:
            fds.append(self._tree)
            moves.append((self._workspace, self._tree, True))
            self._tree = None
        for source in bind_sources(argv):
            if self._tree_inside(source) or any(_under(source, [m[0]]) for m in moves):
                continue
            if _first_closed(source, self._workspace) is None:
                continue
            tree = _clone(source, read_only=True)
            fds.append(tree)
            moves.append((source, tree, os.path.isdir(source)))
        covers: list[str] = []
        for target, _tree, _is_dir in moves:
            closed = _first_closed(target, self._workspace)
            if closed is not None and closed not in covers and not _under(closed, covers):
                covers.append(closed)
        if not moves:  # nothing to attach (the probe's sandbox of /): it only needs to be nobody
            return [_tool("setpriv"), f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
                    "--", *argv]
        ops: list[str] = [word for fd in keep for word in ("keep", str(fd))]
        for folder in sorted(covers, key=lambda f: f.count("/")):
            ops += ["cover", folder]
        for target, tree, is_dir in sorted(moves, key=lambda m: m[0].count("/")):
            if _under(target, covers):
                ops += ["dir" if is_dir else "file", target]
            ops += ["move", str(tree), target]
        return [sys.executable, "-I", "-S", launcher.__file__, *ops, "--", *argv]

    def _tree_inside(self, path: str) -> bool:
        return self._workspace not in ("", "/") and _under(path, [self._workspace])

    def release(self) -> None:
        """Close what was never handed to a launcher."""
        if self._tree is not None:
            with contextlib.suppress(OSError):
                os.close(self._tree)
            self._tree = None


def for_workspace(workspace: str, *, writable: bool, known: frozenset[str], fds: list[int]) -> Identity:
    """Who the command in a sandbox of `workspace` will be; descriptors it needs go to `fds`.

    `known`: the options this bwrap has (`--disable-userns` came with 0.8)."""
    disable = ["--disable-userns"] if "--disable-userns" in known else []
    if os.geteuid() != 0:
        uid, gid = os.geteuid(), os.getegid()
        return Identity(uid, ["--unshare-user", "--uid", str(uid), "--gid", str(gid), *disable])
    mapped_root = Identity(0, ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                               *disable], note=NO_IDMAP_NOTE)
    if shutil.which("setpriv") is None:
        return mapped_root
    try:
        tree = None if workspace == "/" else _owned_tree(workspace, writable=writable)
    except OSError:
        return mapped_root
    return Identity(SANDBOX_UID, ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                                   *disable], _workspace=workspace, _tree=tree, _launcher=True)


def note_for(workspace: str) -> str:
    """The sentence a sandbox of `workspace` would carry (`Identity.note`; NO_IDMAP_NOTE when
    its command would be root outside), "" when the command owns nothing on the host."""
    fds: list[int] = []
    who = for_workspace(workspace, writable=False, known=frozenset(), fds=fds)
    who.release()
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    return who.note


def bind_sources(argv: Sequence[str]) -> list[str]:
    """The paths bwrap's `argv` binds from, in order (its options up to `--`)."""
    found: list[str] = []
    i = 1
    while i < len(argv) and argv[i] != "--":
        word = argv[i]
        if word in _BINDS and i + 2 < len(argv):
            found.append(argv[i + 1])
        i += 3 if word in _TWO else 2 if word in _ONE else 1
    return found


# --- the kernel's part ---------------------------------------------------------------------


def _owned_tree(workspace: str, *, writable: bool) -> int:
    """A detached copy of the workspace's mount, rooted at it, on which its owner is 65534."""
    info = os.stat(workspace)
    tree = _clone(workspace, read_only=not writable)
    try:
        _set_attributes(tree, _ATTR_IDMAP, _owner_namespace(info.st_uid, info.st_gid))
    except OSError:
        os.close(tree)
        raise
    return tree


def _clone(path: str, *, read_only: bool) -> int:
    libc = _libc()
    tree = libc.syscall(_OPEN_TREE, -100, os.fsencode(path),
                        _OPEN_TREE_CLONE | os.O_CLOEXEC | _AT_SYMLINK_NOFOLLOW)
    if tree < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number), path)
    try:
        _set_attributes(tree, _ATTR_NOSUID | _ATTR_NODEV | (_ATTR_RDONLY if read_only else 0))
    except OSError:
        os.close(tree)
        raise
    return tree


def _set_attributes(tree: int, flags: int, userns: int = 0) -> None:
    attributes = _MountAttr(flags, 0, 0, userns)
    if _libc().syscall(_MOUNT_SETATTR, tree, b"", _AT_EMPTY_PATH, ctypes.byref(attributes),
                       ctypes.sizeof(attributes)) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def _owner_namespace(uid: int, gid: int) -> int:
    """A user namespace mapping the workspace's owner to 65534: what its idmapped mount shows."""
    return _user_namespace(f"{uid} {SANDBOX_UID} 1\n", f"{gid} {SANDBOX_UID} 1\n")


def _user_namespace(uid_map: str, gid_map: str) -> int:
    """A new user namespace with these maps (written by us, as root), held by a descriptor."""
    try:
        holder = subprocess.Popen([_tool("unshare"), "--user", "--", "cat"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise OSError(f"unshare could not start ({exc})") from exc
    assert holder.stdin is not None and holder.stdout is not None
    try:
        # cat echoes only once it runs, which is after unshare(2) put it in the new namespace.
        holder.stdin.write(b"x")
        holder.stdin.flush()
        if holder.stdout.read(1) != b"x":
            raise OSError("unshare could not make a user namespace")
        for name, text in (("uid_map", uid_map), ("gid_map", gid_map)):
            with open(f"/proc/{holder.pid}/{name}", "w", encoding="ascii") as out:
                out.write(text)
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.stdin.close()
        holder.wait()


def _tool(name: str) -> str:
    return shutil.which(name) or f"/usr/bin/{name}"


def what_stops(path: str) -> tuple[str, str] | None:
    """What keeps the sandbox's user (nobody when she is root, else her own user with her groups)
    from `path`: `path` itself, a file it can neither read nor run, or else the deepest folder
    above it it can't pass through (as root the launcher covers the ones above what it attaches);
    with why, in words ("mode 700, owned by root"). None when nothing does."""
    if os.geteuid() == 0:
        uid, groups = SANDBOX_UID, {SANDBOX_UID}
    else:
        uid, groups = os.geteuid(), {os.getegid(), *os.getgroups()}
    parts = [p for p in path.split("/") if p]
    for depth in range(len(parts), 0, -1):
        where = "/" + "/".join(parts[:depth])
        try:
            info = os.stat(where)
        except OSError:
            return None  # not there (or a link out of sight): the error says so itself
        last = depth == len(parts)
        if last and not stat.S_ISREG(info.st_mode):
            continue
        wanted = (stat.S_IROTH | stat.S_IXOTH) if last else stat.S_IXOTH
        shift = 6 if info.st_uid == uid else 3 if info.st_gid in groups else 0
        if not (info.st_mode >> shift) & wanted:
            return where, f"mode {stat.S_IMODE(info.st_mode):o}, owned by {_owner(info.st_uid)}"
    return None


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _first_closed(path: str, workspace: str) -> str | None:
    """The shallowest folder above `path` that uid/gid 65534 (no other groups) can't pass
    through; folders inside the workspace count as its own (the idmapped mount shows them so)."""
    parts = [p for p in path.split("/") if p]
    folder = "/"
    for part in parts[:-1]:
        folder = os.path.join(folder, part)
        if workspace and workspace != "/" and _under(folder, [workspace]):
            return None
        try:
            info = os.stat(folder)
        except OSError:
            return None  # not there: bwrap will say so itself
        if info.st_uid == SANDBOX_UID:
            bit = stat.S_IXUSR
        elif info.st_gid == SANDBOX_UID:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return folder
    return None


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)
