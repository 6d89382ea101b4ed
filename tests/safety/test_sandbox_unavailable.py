"""Where the sandbox cannot run (no bubblewrap, or user namespaces switched off): doctor says so
with the fix, and shell and execute_code are not offered unless the user turns on "Run
commands without a sandbox" in Settings → Approvals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ui_loop import qt_gc_fixture  # noqa: F401 (the qt_gc fixture)

from companion.config import Paths, Settings, with_overrides
from companion.doctor import machine as doctor
from companion.doctor.report import format_report
from companion.safety.consent.approval import Answer, ApprovalRequest, AuditLog, Decision
from companion.safety.gate import Gate, ProcessRefused
from companion.safety.grants import GrantStore
from companion.safety.sandbox import probe, sandbox
from companion.tools import registry
from companion.tools.action import shell
from companion.tools.context import ToolContext
from companion.tools.families import ON_REQUEST_TOOLSETS

EXEC_TOOLS = {"shell", "execute_code"}
NO_USERNS = ("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
             "does not allow non-privileged user namespaces.' >&2\nexit 1\n")


@pytest.fixture(autouse=True)
def _switch_back_off():
    yield
    probe.configure(allow_unsandboxed=False)


@pytest.fixture(params=["no bwrap", "no user namespaces"])
def broken(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """PATH without bubblewrap, or with one that cannot make a namespace (as on a locked-down kernel)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "sh", "env", "cat", "echo", "touch"):
        (bin_dir / name).symlink_to(shutil.which(name))
    if request.param == "no user namespaces":
        fake = bin_dir / "bwrap"
        fake.write_text(NO_USERNS)
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return request.param


def offered_names() -> set[str]:
    return {spec.name for spec in registry.discover().offered("work")}


def test_with_the_sandbox_working_commands_and_code_are_offered() -> None:
    assert probe.unavailable_reason() is None
    assert offered_names() >= EXEC_TOOLS
    assert doctor.check_sandbox(Settings()).ok


def test_without_a_sandbox_commands_and_code_are_not_offered_and_doctor_says_why(broken: str) -> None:
    offered = offered_names()
    assert not EXEC_TOOLS & offered
    assert {"read_file", "write_file", "search_files"} <= offered  # the rest of her tools stay
    check = doctor.check_sandbox(Settings())
    assert not check.ok and not check.essential
    expected = "not installed" if broken == "no bwrap" else "user namespaces may be off"
    assert expected in check.detail and "switched off" in check.detail
    report = format_report([check])
    assert "fix: Install bubblewrap and libseccomp (sudo apt-get install bubblewrap libseccomp2)" in report
    assert "Run commands without a sandbox" in report


class Approves:
    async def ask(self, request: ApprovalRequest) -> Answer:
        return Answer(Decision.APPROVED)


async def test_the_door_refuses_to_start_anything_without_the_sandbox(broken: str, tmp_path: Path) -> None:
    gate = Gate(tmp_path / "ws", GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))
    ctx = ToolContext(workspace=tmp_path / "ws", data_dir=tmp_path / "data", services={"gate": gate},
                      tool="shell", risk="exec")
    text = await shell.execute({"command": "touch made.txt"}, ctx)
    assert ctx.refused and "Install bubblewrap" in text
    assert not (tmp_path / "ws" / "made.txt").exists()
    with pytest.raises(ProcessRefused):
        await gate.run(await gate.review("echo hi"), risk="exec", timeout_s=5)


async def test_the_user_can_choose_to_run_commands_without_a_sandbox(broken: str, tmp_path: Path) -> None:
    probe.configure(allow_unsandboxed=True)
    assert offered_names() >= EXEC_TOOLS
    gate = Gate(tmp_path / "ws", GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))
    ctx = ToolContext(workspace=tmp_path / "ws", data_dir=tmp_path / "data", services={"gate": gate},
                      tool="shell", risk="exec")
    text = await shell.execute({"command": "touch made.txt; echo done"}, ctx)
    assert "done" in text and (tmp_path / "ws" / "made.txt").exists()
    assert gate.audit.runs()[-1]["ran"]["sandboxed"] is False
    check = doctor.check_sandbox(with_overrides(Settings(), tools={"run_without_sandbox": True}))
    assert not check.ok and "WITHOUT a sandbox" in check.detail


def test_the_approvals_tab_switch_explains_itself_and_saves_the_choice(
        qtbot, qt_gc, broken: str, tmp_path: Path) -> None:
    from companion.ui.settings.dialog import SettingsDialog
    from companion.ui.settings.keeper import SettingsKeeper

    paths = Paths.default(tmp_path / "config")
    reg = registry.discover()
    dialog = SettingsDialog(SettingsKeeper(paths, Settings()), reg)
    qtbot.addWidget(dialog)
    tab = dialog.approvals
    assert tab.unsandboxed.text() == "Run commands without a sandbox" and not tab.unsandboxed.isChecked()
    note = tab.sandbox_note.text()
    assert "WITHOUT a sandbox" in note and "can read, change or delete any of your files" in note
    tab.unsandboxed.setChecked(True)
    dialog.accept()
    assert dialog.keeper.settings.tools.run_without_sandbox is True
    assert "run_without_sandbox = true" in paths.settings_file.read_text()


async def test_saving_the_switch_offers_commands_at_once(broken: str, tmp_path: Path, scripted_brain) -> None:
    from brain_harness import make_config, start_companion

    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url), registry.discover())
    try:
        def offered() -> set[str]:
            return {s.name for s in companion.registry.offered("companion", opened=ON_REQUEST_TOOLSETS)}

        assert not EXEC_TOOLS & offered()
        companion.apply_settings(with_overrides(companion.settings, tools={"run_without_sandbox": True}))
        assert offered() >= EXEC_TOOLS
    finally:
        await companion.close()


async def test_without_slirp4netns_a_command_that_needs_the_internet_is_refused_never_given_her_network(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A machine without slirp4netns (everything else the sandbox needs is here).
    monkeypatch.setattr(sandbox, "find_slirp", lambda: None)
    assert probe.unavailable_reason() is None  # commands still run, offline
    gate = Gate(tmp_path / "ws", GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))
    ctx = ToolContext(workspace=tmp_path / "ws", data_dir=tmp_path / "data", services={"gate": gate},
                      tool="shell", risk="exec")
    text = await shell.execute({"command": "touch online.txt", "network": True}, ctx)
    assert ctx.refused and "slirp4netns is not installed" in text and "apt-get install slirp4netns" in text
    assert not (tmp_path / "ws" / "online.txt").exists()
    assert "offline" in await shell.execute({"command": "echo offline"}, ctx)
