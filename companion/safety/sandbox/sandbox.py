"""The kernel sandbox every process she starts runs in: bubblewrap (`bwrap`), as Flatpak uses it.

Inside: the system read-only; the workspace read-only, or writable when the user approved a
command that writes (`SandboxPolicy.writable`); a private /tmp of limited size; the user's
home (and every other home, /run, /media, /mnt) hidden behind empty read-only folders, and
her own config and data folders hidden too, even when the workspace contains them, and her
own code and virtual environment read-only there; a fresh
/proc in a new PID namespace with /proc/sys, /proc/sysrq-trigger and the other kernel knobs
read-only, so nothing can read her environment or tune the kernel, and everything ends when
the first process ends.

No privilege inside or outside, even when she runs as root: the command is the unprivileged
user 65534 in a user namespace of its own and on the host too (identity.py; her own uid when
she is not root), every capability dropped, no new privileges, no nested user namespaces,
every mount nosuid, and a seccomp filter (seccomp.py) that refuses to make any file setuid or
setgid. Resource limits per call hold processes, memory, file size and CPU time (limits.py;
as root, a cgroup of its own per call, cgroup.py).

In a workspace that holds the home, a writable command sees the home read-only but for its
visible entries (the user's startup files stay as they are), and every folder above one of
hers is a mount point, so hers can't be moved aside and replaced. A writable command sees the
folders the user's shell runs programs from (jail.path_folders) and each repository's
settings, hooks and attributes (git_insides.py) read-only too: what the user runs later.

No network unless a decision grants it, and then the internet only: a network namespace of
its own behind slirp4netns (outbound.py), never hers, with this computer's addresses and the
local network routed nowhere (fence.py).

Whether it can run here at all is probe.py's question.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from companion.safety.jail.jail import path_folders
from companion.safety.jail.own_files import mounted_copies
from companion.safety.network.outbound import RESOLV_CONF, Outbound, find_slirp
from companion.safety.sandbox import identity, landlock
from companion.safety.sandbox.cgroup import CallCgroup
from companion.safety.sandbox.git_insides import read_only_insides
from companion.safety.sandbox.layout import writable_layout
from companion.safety.sandbox.limits import Limits, ProcessCount, prlimit_argv
from companion.safety.sandbox.seccomp import filter_fd

__all__ = [
    "NETWORK_FIX",
    "Prepared",
    "SandboxPolicy",
    "Snapshot",
    "network_unavailable_reason",
    "prepare",
]

NETWORK_FIX = "Install slirp4netns (sudo apt-get install slirp4netns) to let approved commands go online."

SANDBOX_UID = identity.SANDBOX_UID

# Folders that hold other people's or the user's private files; never shown inside.
_HIDDEN_SYSTEM = ("/home", "/root", "/run", "/media", "/mnt", "/var/tmp", "/tmp")
# Kernel knobs under /proc that root could write (the sandbox's user is root outside where no
# idmapped mount can be made: identity.py).
_PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs", "acpi", "driver", "tty", "mtrr")
_HELP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Snapshot:
    """A workspace file's content as it was approved, shown read-only at its path inside."""

    data: bytes
    mode: int
    """Its permission bits (so a pinned `./run.sh` stays executable)."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What one sandboxed process may touch."""

    workspace: Path
    """Bound as the working directory: read-only unless `writable`."""
    writable: bool
    """The workspace is writable: only for what the user approved as changing files."""
    network: bool = False
    """The internet (through slirp4netns); only an explicit, just-asked approval sets it."""
    hidden: tuple[Path, ...] = field(default=())
    """Her own folders (config, data): hidden even when inside the workspace."""
    read_only: tuple[Path, ...] = field(default=())
    """Folders shown but never writable, even inside a writable workspace (her code, her venv)."""
    snapshots: Mapping[str, Snapshot] = field(default_factory=dict)
    """{path relative to the workspace: the content to show there}: pinned files."""
    limits: Limits = field(default_factory=Limits)
    visible: tuple[str, ...] = field(default=())
    """Files and folders of the hidden ones shown read-only anyway (a declared server's program)."""


@dataclass
class Prepared:
    """A sandbox ready to start: run `argv` passing `pass_fds` (then close them), attach
    `outbound` once started, and `release()` when the call is over."""

    argv: list[str]
    pass_fds: tuple[int, ...]
    outbound: Outbound | None = None
    cap: CallCgroup | ProcessCount | None = None
    """What the door watches for the process cap: the call's cgroup (as root), or a count."""
    host_uid: int = -1
    """Who the command is on the host (65534 when she is root, her own uid otherwise)."""
    note: str = ""
    """A sentence when the command is less unprivileged than that (identity.py)."""

    def hand_over(self) -> tuple[int, ...]:
        """The descriptors for bwrap; from now on whoever starts it closes them (the runner does)."""
        fds, self.pass_fds = self.pass_fds, ()
        return fds

    def close_fds(self) -> None:
        """Close the descriptors meant for bwrap (after it started, or when it never will)."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()

    async def release(self) -> None:
        """End slirp4netns and remove the process cap; safe to call twice."""
        self.close_fds()
        if self.outbound is not None:
            await self.outbound.close()
        if self.cap is not None:
            await self.cap.aclose()


def network_unavailable_reason() -> str | None:
    """Why a sandboxed command can't be given the internet here (a sentence), or None."""
    if find_slirp() is None:
        return ("slirp4netns is not installed, so I can't give a command the internet without also "
                "giving it the programs running on this computer.")
    if not os.access("/dev/net/tun", os.R_OK | os.W_OK):
        return ("I can't open /dev/net/tun, which slirp4netns needs to give a command the internet "
                "(on most systems everyone may; here its permissions were narrowed).")
    return None


def prepare(bwrap: str, policy: SandboxPolicy, argv: Sequence[str]) -> Prepared:
    """Everything needed to run `argv` inside the sandbox `policy` describes.

    Raises SeccompUnavailable when the filter can't be built, OSError when a descriptor
    can't be made; the network needs slirp4netns (check `network_unavailable_reason()`).
    """
    fds: list[int] = []
    who: identity.Identity | None = None
    cap: CallCgroup | None = None
    try:
        known = _options(bwrap)
        who = identity.for_workspace(str(policy.workspace), writable=policy.writable, known=known, fds=fds)
        args = [bwrap, *_mounts(policy, fds, who, sizes="--size" in known)]
        outbound = None
        if policy.network:
            slirp = find_slirp()
            if slirp is None:
                raise OSError(network_unavailable_reason())
            outbound = Outbound(slirp)
            fds.extend(outbound.child_fds)
            args += outbound.bwrap_args()
        # Always a network namespace of its own: with the internet, slirp4netns is its only way out.
        args.append("--unshare-net")
        cap = CallCgroup.make(policy.limits.processes, policy.limits.memory_bytes) if os.geteuid() == 0 else None
        # Without a cgroup holding its memory, the filter keeps memory that RLIMIT_DATA can't count out.
        counted = cap is not None and cap.holds_memory
        seccomp = filter_fd(read_only=not policy.writable, memory_counted=counted)
        fds.append(seccomp)
        if not counted:
            # A shared mapping of /dev/zero is uncounted shared memory; /dev/full reads the same
            # zeros and can't be mapped at all (ENODEV).
            args += ["--dev-bind", "/dev/full", "/dev/zero"]
        scratch = landlock.writable_folders(str(policy.workspace))
        if not policy.writable and landlock.SCRATCH not in scratch:
            args += ["--setenv", "TMPDIR", "/dev/shm"]
        args += ["--chdir", str(policy.workspace), *who.user_args,
                 "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
                 "--cap-drop", "ALL", "--seccomp", str(seccomp),
                 "--die-with-parent", "--new-session", "--", *prlimit_argv(policy.limits),
                 # A read-only run writes into no FIFO or socket file of the workspace either.
                 *([] if policy.writable else landlock.argv_for(sys.executable, scratch)), *argv]
        args = who.launch(args, fds)
    except BaseException:
        if who is not None:
            who.release()
        if cap is not None:
            cap.close()
        for fd in fds:
            os.close(fd)
        raise
    # As root, a cgroup holds the whole call's processes and memory. RLIMIT_NPROC holds the
    # processes of a call as 65534 too; root's own are not counted against it: where no cgroup
    # can be made for a call that is root outside, only a count the door watches is left.
    # As a user, RLIMIT_NPROC in the call's own user namespace holds it, and the door stops a
    # call held there (a fork bomb retries its forks for ever) once the count shows the cap.
    held: CallCgroup | ProcessCount | None = cap
    if cap is not None:
        args = cap.wrap(args)
    elif os.geteuid() != 0 or who.uid == 0:
        held = ProcessCount(policy.limits.processes)
    return Prepared(args, tuple(fds), outbound, held, host_uid=who.uid, note=who.note)


@functools.lru_cache(maxsize=8)
def _options(bwrap: str) -> frozenset[str]:
    """The options this bwrap knows (from its --help), so older releases still get a sandbox."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=_HELP_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(word for word in (done.stdout + done.stderr).split() if word.startswith("--"))


def _mounts(policy: SandboxPolicy, fds: list[int], who: identity.Identity, *, sizes: bool = True) -> list[str]:
    """The mount options, in the order bwrap applies them (later mounts cover earlier ones);
    `sizes`: this bwrap can limit a tmpfs (0.7 and later)."""
    workspace = str(policy.workspace)
    size = (lambda n: ["--size", str(n)]) if sizes else (lambda n: [])
    # bwrap's /dev/shm is an unlimited tmpfs (half the memory): a small one of our own instead.
    args = ["--ro-bind", "/", "/", "--dev", "/dev", *size(policy.limits.shm_bytes),
            "--tmpfs", "/dev/shm", "--proc", "/proc"]
    for name in _PROC_READ_ONLY:
        # bwrap 0.8 skips /proc/sys when the folder itself looks read-only; its files are not.
        if os.path.exists(f"/proc/{name}"):
            args += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    hidden = [p for p in _HIDDEN_SYSTEM if os.path.isdir(p)]
    home = os.path.realpath(Path.home())
    if os.path.isdir(home) and home != "/" and not _under(home, hidden):
        hidden.append(home)
    for folder in hidden:
        if folder == "/tmp":
            args += size(policy.limits.tmp_bytes)
        args += ["--tmpfs", folder]
    # The interpreter she runs code with may live in a hidden folder (a venv in the home), and
    # so may the Landlock helper a read-only run starts first (her checkout in the home).
    # Or under a folder the sandbox's user may not enter (a `mktemp -d` folder, mode 700): bound,
    # the launcher attaches it where that user can reach it (identity.py).
    for folder in [*_interpreter_folders(), *([] if policy.writable else [landlock.helper()])]:
        if (_under(folder, hidden) or not who.reachable(folder)) and not _under(workspace, [folder]):
            args += ["--ro-bind", folder, folder]
    for path in policy.visible:
        # What a declared server runs from (companion/mcp/program.py), never a hidden root itself.
        if (_under(path, hidden) or not who.reachable(path)) and path not in hidden and os.path.exists(path):
            args += ["--ro-bind", path, path]
    if policy.network:
        resolv = os.path.realpath("/etc/resolv.conf")
        args += ["--ro-bind-data", str(_data_fd(RESOLV_CONF, fds)), resolv]
        hosts = os.path.realpath("/etc/hosts")
        if hosts != "/etc/hosts" and _under(hosts, hidden) and os.path.exists(hosts):
            args += ["--ro-bind", hosts, hosts]
    if workspace != "/":
        args += ["--bind" if policy.writable else "--ro-bind", workspace, workspace]
    if policy.writable and workspace != "/":
        args += writable_layout(workspace, home, policy.hidden)
    for extra in [*policy.read_only, *(path_folders() + read_only_insides(workspace) if policy.writable else [])]:
        # Her own code inside the workspace: what a command changed there would run in her next
        # start; a folder on the user's PATH (~/bin), a repository's settings and hooks: what
        # the user runs later.
        text = os.path.realpath(extra)
        if text != workspace and _under(text, [workspace]) and os.path.exists(text):
            args += ["--ro-bind", text, text]
    for relative, snapshot in sorted(policy.snapshots.items()):
        # The approved content itself, read once: a writer can't swap the file after the check.
        args += ["--perms", f"{snapshot.mode & 0o755:o}",
                 "--ro-bind-data", str(_data_fd(snapshot.data, fds)), os.path.join(workspace, relative)]
    # Her folders are hidden after the workspace is bound, so a workspace holding them can't show them.
    own = []
    # And wherever the mount table shows one of them mounted again inside the workspace.
    for extra in [*policy.hidden, *mounted_copies(policy.hidden, workspace)]:
        text = os.path.realpath(extra)
        if text == "/" or not (_under(text, [workspace]) or not _under(text, hidden)) or not who.reachable(text):
            continue  # already out of sight
        if os.path.isdir(text):
            args += ["--tmpfs", text]
            own.append(text)
        elif os.path.isfile(text):  # a file of hers kept elsewhere (a personality): shown empty
            args += ["--ro-bind-data", str(_data_fd(b"", fds)), text]
    for folder in [*hidden, *own]:
        # Empty and read-only (a workspace bound inside stays as bound); /tmp stays private scratch.
        if folder != "/tmp":
            args += ["--remount-ro", folder]
    return args


def _data_fd(data: bytes, fds: list[int]) -> int:
    fd = os.memfd_create("companion-sandbox-data", os.MFD_CLOEXEC)
    fds.append(fd)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _interpreter_folders() -> list[str]:
    folders = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
               os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(f for f in folders if os.path.isdir(f))
