"""`companion doctor` says who a sandboxed command is on the host, with identity.py's note when it
is root outside, and whether Landlock keeps a read-only command from writing into FIFOs."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from companion.config import Settings, with_overrides
from companion.doctor import machine as doctor
from companion.doctor.report import format_report
from companion.safety.sandbox import identity, landlock

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="as a user, the sandbox is that user: nothing of root's is mapped")


def settings_for(workspace: Path) -> Settings:
    workspace.mkdir(exist_ok=True)
    return with_overrides(Settings(), tools={"workspace": str(workspace)})


@as_root
def test_doctor_warns_that_commands_run_as_root_outside_when_the_workspace_cannot_be_idmapped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_idmap(workspace: str, *, writable: bool) -> int:
        raise OSError(errno.EINVAL, "Invalid argument")  # what a filesystem without idmapped mounts says

    monkeypatch.setattr(identity, "_owned_tree", no_idmap)
    check = doctor.check_sandbox_user(settings_for(tmp_path / "work"))
    assert not check.ok and not check.essential  # a warning: she still talks
    assert check.detail == identity.NO_IDMAP_NOTE
    assert "Linux 5.12" in check.fix and "ordinary user" in check.fix
    report = format_report([check])
    assert f"[warn] Sandbox user: {identity.NO_IDMAP_NOTE}" in report and "       fix: " in report


def test_doctor_says_commands_own_nothing_on_the_host_where_the_workspace_can_be_idmapped(tmp_path: Path) -> None:
    check = doctor.check_sandbox_user(settings_for(tmp_path / "work"))
    assert check.ok, check.detail
    if os.geteuid() == 0:
        assert check.detail.startswith("commands run as nobody (65534) on the host too")
    else:
        assert check.detail == f"commands run as you (uid {os.geteuid()}) with no privileges"


def test_doctor_says_whether_landlock_holds_a_read_only_command(monkeypatch: pytest.MonkeyPatch) -> None:
    present = doctor.check_landlock()
    assert present.ok == (landlock.abi() >= 1) and not present.essential
    if present.ok:
        assert present.detail.startswith(f"available (ABI {landlock.abi()})")

    monkeypatch.setattr(landlock, "abi", lambda: 0)
    absent = doctor.check_landlock()
    assert not absent.ok and not absent.essential
    assert "no Landlock" in absent.detail and "FIFO" in absent.detail and "Linux 5.13" in absent.fix


@as_root
def test_doctor_does_not_blame_the_system_for_a_workspace_that_is_not_there(tmp_path: Path) -> None:
    settings = with_overrides(Settings(), tools={"workspace": str(tmp_path / "gone")})
    check = doctor.check_sandbox_user(settings)
    assert not check.ok and check.detail == f"can't tell: {tmp_path / 'gone'} is not there"
