"""The kernel sandbox every process she starts runs in: bubblewrap (`bwrap`), as Flatpak uses it.

Inside: the system read-only; the workspace the only writable place; a private /tmp; the
user's home (and every other home, /run, /media, /mnt and her own config and data folders)
hidden behind empty read-only folders; a fresh /proc in a new PID namespace, so nothing can
read her environment through /proc and everything ends when the first process ends; no
capabilities, even when she runs as root; no network unless a decision grants it.

Whether the sandbox can run here is probed once (bwrap missing, user namespaces switched off,
not Linux); `unavailable_reason()` says why in a sentence and `FIX` says what to do.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "FIX",
    "SandboxPolicy",
    "allow_unsandboxed",
    "bwrap_command",
    "commands_allowed",
    "configure",
    "find_bwrap",
    "unavailable_reason",
]

FIX = ("Install bubblewrap (sudo apt-get install bubblewrap) and make sure user namespaces are "
       "allowed (sysctl kernel.unprivileged_userns_clone=1), or switch on \"Run commands "
       "without a sandbox\" in Settings → Approvals if you accept the risk.")

# Folders that hold other people's or the user's private files; never shown inside.
_HIDDEN_SYSTEM = ("/home", "/root", "/run", "/media", "/mnt", "/var/tmp", "/tmp")
_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SandboxPolicy:
    """What one sandboxed process may touch."""

    workspace: Path
    """Bound read-write and the working directory: the only place a change survives."""
    network: bool = False
    """Share the host's network; only an explicit, just-asked approval sets it."""
    hidden: tuple[Path, ...] = field(default=())
    """Extra folders to hide (her config and data folders)."""


def find_bwrap() -> str | None:
    """The bwrap executable on PATH, or None."""
    return shutil.which("bwrap")


def unavailable_reason() -> str | None:
    """Why the sandbox cannot run here (a sentence), or None when it works."""
    if not sys.platform.startswith("linux"):
        return "The command sandbox (bubblewrap) only exists on Linux."
    bwrap = find_bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed, so I can't sandbox commands."
    return _probe(bwrap)


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> str | None:
    """Start `true` in the same kind of sandbox the real commands get; cached per bwrap path."""
    argv = bwrap_command(bwrap, SandboxPolicy(Path("/")), ["true"])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not start ({exc})."
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        detail = said[-1] if said else f"exit {done.returncode}"
        return f"bubblewrap is installed but can't make a sandbox here ({detail}); user namespaces may be off."
    return None


def bwrap_command(bwrap: str, policy: SandboxPolicy, argv: Sequence[str]) -> list[str]:
    """The full command line that runs `argv` inside the sandbox `policy` describes."""
    workspace = str(policy.workspace)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden = [p for p in _HIDDEN_SYSTEM if os.path.isdir(p)]
    for extra in (Path.home(), *policy.hidden):
        text = os.path.realpath(extra)
        if os.path.isdir(text) and text != "/" and not _under(text, hidden):
            hidden.append(text)
    for folder in hidden:
        args += ["--tmpfs", folder]
    # The interpreter she runs code with may live in a hidden folder (a venv in the home).
    for folder in _interpreter_folders():
        if _under(folder, hidden) and not _under(workspace, [folder]):
            args += ["--ro-bind", folder, folder]
    if policy.network:
        for resolver in _resolver_files():
            if _under(resolver, hidden):
                args += ["--ro-bind", resolver, resolver]
    if workspace != "/":
        args += ["--bind", workspace, workspace]
    for folder in hidden:
        # Empty and read-only (the workspace bound inside stays writable); /tmp stays private scratch.
        if folder != "/tmp":
            args += ["--remount-ro", folder]
    args += ["--chdir", workspace, "--unshare-all"]
    if policy.network:
        args.append("--share-net")
    # As root bwrap keeps every capability (CAP_SYS_ADMIN could remount /); drop them all.
    args += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--"]
    return args + list(argv)


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _interpreter_folders() -> list[str]:
    folders = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
               os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(f for f in folders if os.path.isdir(f))


def _resolver_files() -> list[str]:
    # /etc/resolv.conf is often a link into /run (systemd-resolved), which is hidden.
    found = []
    for name in ("/etc/resolv.conf", "/etc/hosts"):
        real = os.path.realpath(name)
        if real != name and os.path.exists(real):
            found.append(real)
    return found


# --- the user's choice where the sandbox cannot run -------------------------------------

_allow_unsandboxed = False


def configure(*, allow_unsandboxed: bool) -> None:
    """Apply Settings → Approvals → "Run commands without a sandbox" (the runtime calls this)."""
    global _allow_unsandboxed
    _allow_unsandboxed = bool(allow_unsandboxed)


def allow_unsandboxed() -> bool:
    return _allow_unsandboxed


def commands_allowed() -> bool:
    """shell and execute_code are offered: the sandbox works, or the user accepted running without it."""
    return unavailable_reason() is None or _allow_unsandboxed
