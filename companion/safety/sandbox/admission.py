"""Admission: a permitted run made ready before anything starts, its pinned files shown as approved.

Once the door has taken a permit's ticket, the run is prepared off the event loop: the
workspace checked, each pinned file held to the content the user approved (taken with the card,
or read now and checked against its hash), her linked files detached, and the bubblewrap sandbox
prepared for exactly what the permit allows (or, where none can run and the user allowed it,
nothing). Kept apart from the door, which decides whether a permit is honoured at all.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from companion.safety.consent.approval import ACCESS_WRITE
from companion.safety.jail.beneath import open_beneath, stat_beneath
from companion.safety.jail.jail import JailError, ensure_workspace
from companion.safety.jail.own_files import detach_links
from companion.safety.sandbox import probe, sandbox
from companion.safety.sandbox.limits import Limits
from companion.safety.sandbox.permit import Permit, ProcessRefused
from companion.safety.sandbox.seccomp import SeccompUnavailable

__all__ = ["MAX_PINNED_BYTES", "Admitted", "discard", "prepare"]

MAX_PINNED_BYTES = 64 * 1024 * 1024
"""The largest pinned file the door reads and shows as approved (as large as pins.py hashes)."""


@dataclass
class Admitted:
    """A permit past the door, its run prepared: what starts, and where."""

    permit: Permit
    workspace: Path
    prepared: sandbox.Prepared | None
    """None when it runs without the sandbox (the user's choice where none can run)."""

    @property
    def argv(self) -> list[str]:
        return self.prepared.argv if self.prepared is not None else list(self.permit.argv)


def prepare(permit: Permit, workspace: Path, *, hidden: tuple[Path, ...], read_only: tuple[Path, ...],
            limits: Limits) -> Admitted:
    """The run of an admitted `permit` made ready in `workspace`, with her folders `hidden` and
    her code `read_only` inside; blocking (it starts a process and reads files)."""
    try:
        workspace = ensure_workspace(workspace)
    except JailError as exc:
        raise ProcessRefused("workspace", exc.sentence) from exc
    snapshots = _snapshots(permit, workspace)
    # A file of hers with another name (a hard link in the workspace) gets a copy of its own
    # first: the command may write through that name, never into what she reads.
    detach_links(hidden)
    reason = probe.unavailable_reason()
    if reason is None:
        if permit.network and (why := sandbox.network_unavailable_reason()):
            raise ProcessRefused("no_network", f"{why} {sandbox.NETWORK_FIX}")
        policy = sandbox.SandboxPolicy(workspace, writable=permit.access == ACCESS_WRITE,
                                       network=permit.network, hidden=hidden,
                                       read_only=read_only,
                                       snapshots=snapshots, limits=limits,
                                       visible=permit.visible)
        bwrap = probe.find_bwrap()
        assert bwrap is not None
        try:
            prepared = sandbox.prepare(bwrap, policy, permit.argv)
        except (SeccompUnavailable, OSError) as exc:
            raise ProcessRefused("no_sandbox", f"I couldn't prepare the sandbox ({exc}).") from exc
        return Admitted(permit, workspace, prepared)
    if probe.allow_unsandboxed():
        return Admitted(permit, workspace, None)
    raise ProcessRefused("no_sandbox", f"{reason} {probe.unavailable_fix()}")


def _snapshots(permit: Permit, workspace: Path) -> dict[str, sandbox.Snapshot]:
    """What each pinned file is shown as: the content taken when it was approved, or (a pin
    without content) the file read now and checked; raises ProcessRefused("changed") when it differs."""
    # A file gone since is not made again (bwrap would create it to mount on): it runs as absent.
    found = {relative: sandbox.Snapshot(data, mode) for relative, (data, mode) in permit.contents.items()
             if _still_there(workspace, relative)}
    for relative, expected in sorted(permit.pins.items()):
        if relative in found:
            continue
        try:
            fd = open_beneath(workspace, relative, shared=True)  # what runs is shown as read, links or not
        except OSError:
            fd = None
        data, mode = b"", 0
        if fd is not None:
            with os.fdopen(fd, "rb") as f:
                info = os.fstat(f.fileno())
                if stat.S_ISREG(info.st_mode):
                    data, mode = f.read(MAX_PINNED_BYTES + 1), info.st_mode
        if len(data) > MAX_PINNED_BYTES:
            raise ProcessRefused("too_big", f"{relative} is too big for me to hold to what you approved "
                                 f"(over {MAX_PINNED_BYTES >> 20} MB), so I didn't run it.")
        digest = hashlib.sha256(data).hexdigest() if mode else ""
        if digest != expected:
            raise ProcessRefused("changed", f"{relative} changed since you approved it, so I didn't run it; "
                                 "it needs your OK again.")
        if mode:
            found[relative] = sandbox.Snapshot(data, mode)
    return found


def discard(work: asyncio.Future[Admitted]) -> None:
    """Give back what a run prepared after its start was cancelled (its descriptors, its cgroup)."""
    if work.cancelled() or work.exception() is not None:
        return
    prepared = work.result().prepared
    if prepared is not None:
        prepared.close_fds()
        if prepared.cap is not None:
            prepared.cap.close()


def _still_there(workspace: Path, relative: str) -> bool:
    try:
        return stat_beneath(workspace, relative) is not None
    except OSError:
        return False
