"""Whether her sandbox can run here, and the user's choice where it can't.

The question is asked with the same kind of sandbox the commands get (sandbox.py's `prepare`,
running `true`): bwrap missing, user namespaces switched off, not Linux, no libseccomp, a
folder of hers its user may not enter. `unavailable_reason()` says why in a sentence and
`unavailable_fix()` what to do. A success stands for the run, a failure for 30 s: then it is
tried again, so what the user fixed meanwhile (a folder's permissions) brings the tools back
without a restart.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from companion.safety.sandbox import identity
from companion.safety.sandbox.sandbox import SANDBOX_UID, SandboxPolicy, prepare
from companion.safety.sandbox.seccomp import SeccompUnavailable

__all__ = [
    "FIX",
    "allow_unsandboxed",
    "commands_allowed",
    "configure",
    "find_bwrap",
    "unavailable_fix",
    "unavailable_reason",
]

FIX = ("Install bubblewrap and libseccomp (sudo apt-get install bubblewrap libseccomp2) and make "
       "sure user namespaces are allowed (sysctl kernel.unprivileged_userns_clone=1), or switch on "
       "\"Run commands without a sandbox\" in Settings → Approvals if you accept the risk.")
_PROBE_TIMEOUT_S = 10.0
_RETRY_S = 30.0
"""How long a failed probe's answer stands before the sandbox is tried again."""
_PATH = re.compile(r"/[^\s:;,'\"()]+")
_probed: dict[str, tuple[tuple[str, str] | None, float]] = {}
_now = time.monotonic


def find_bwrap() -> str | None:
    """The bwrap executable on PATH, or None."""
    return shutil.which("bwrap")


def unavailable_reason() -> str | None:
    """Why the sandbox cannot run here (a sentence), or None when it works."""
    why = _unavailable()
    return why[0] if why else None


def unavailable_fix() -> str:
    """What to do about `unavailable_reason()` (FIX unless the probe found something precise)."""
    why = _unavailable()
    return why[1] if why else FIX


def _unavailable() -> tuple[str, str] | None:
    if not sys.platform.startswith("linux"):
        return "The command sandbox (bubblewrap) only exists on Linux.", FIX
    bwrap = find_bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed, so I can't sandbox commands.", FIX
    return _probe(bwrap)


def _probe(bwrap: str) -> tuple[str, str] | None:
    """Whether `true` starts in the same kind of sandbox the real commands get: None, or why
    not and what to do. Success is kept for the run; a failure only for `_RETRY_S`, so what
    the user fixed meanwhile (a folder's permissions) brings the tools back without a restart."""
    known = _probed.get(bwrap)
    if known is not None and (known[0] is None or _now() - known[1] < _RETRY_S):
        return known[0]
    found = _try_sandbox(bwrap)
    _probed[bwrap] = (found, _now())
    return found


def _try_sandbox(bwrap: str) -> tuple[str, str] | None:
    try:
        prepared = prepare(bwrap, SandboxPolicy(Path("/"), writable=False), ["true"])
    except SeccompUnavailable as exc:
        return f"The command sandbox needs libseccomp, but {exc}.", FIX
    except OSError as exc:
        return f"The command sandbox could not be prepared ({exc.strerror or exc}).", FIX
    try:
        done = subprocess.run(prepared.argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, pass_fds=prepared.pass_fds)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not start ({exc}).", FIX
    finally:
        prepared.close_fds()
        if prepared.cap is not None:
            # Its processes take a moment to leave the cgroup after the sandbox ended.
            deadline = time.monotonic() + 2.0
            while not prepared.cap.close() and time.monotonic() < deadline:
                time.sleep(0.01)
    if done.returncode == 0:
        return None
    said = (done.stderr or done.stdout).strip().splitlines()
    return _why_not(said[-1] if said else f"exit {done.returncode}")


def _why_not(detail: str) -> tuple[str, str]:
    """The sentence and the fix for a probe that failed saying `detail` (bwrap's or the
    command's last words): the folder or file that stops the sandbox's user, when one does."""
    for path in reversed(_PATH.findall(detail)):  # the last one named is the one that failed
        stops = identity.what_stops(path)
        if stops is None:
            continue
        where, why = stops
        user = f"nobody ({SANDBOX_UID})" if os.geteuid() == 0 else "your user"
        verb, bits = ("pass through", "o+x") if where != path or os.path.isdir(where) else ("read", "o+r")
        needs = f", and it needs {path}" if where != path else ""
        return (f"The command sandbox can't run here: its user, {user}, may not {verb} {where} ({why}){needs} "
                f"({detail}).",
                f"Let others {verb} it (chmod {bits} {where}), or install me where others may; I try "
                f"again within {_RETRY_S:.0f} seconds.")
    if "namespace" in detail:
        return f"bubblewrap is installed but can't make a sandbox here ({detail}); user namespaces may be off.", FIX
    return f"bubblewrap is installed but can't make a sandbox here ({detail}).", FIX


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
