"""The sandbox works wherever she is installed, or says which folder or file stops it (issue 57, item 3).

Her interpreter and the Landlock helper of her checkout run inside every read-only sandbox. Put
in a folder the sandbox's user may not enter (a `mktemp -d` folder, mode 700, as root's home
is), every sandboxed tool was switched off for the session with a sentence blaming user
namespaces. Each test installs her (a copy of the checkout and a virtual environment of its
own) and runs her in a process of her own, since what she runs inside is her own interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import real_sandbox_fixture  # noqa: F401 (fixture)

import companion
from companion.safety.sandbox import probe

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="a user's own folder of mode 700 is the user's to enter")

# Her, started from the installed copy: the probe's answer, then granted code run read-only
# (her interpreter, behind the Landlock helper), then the doctor's line.
HER = r"""
import asyncio, sys
from pathlib import Path
from companion.config import Settings
from companion.doctor import machine
from companion.safety.sandbox import probe
from companion.safety.gate import CODE_FAMILY, Gate
from companion.safety.grants import GrantStore
from companion.tools.action import execute_code
from companion.tools.context import ToolContext

workspace = Path(sys.argv[1])
print("REASON:", probe.unavailable_reason())
print("FIX:", probe.unavailable_fix())
check = machine.check_sandbox(Settings())
print("DOCTOR:", check.ok, check.fix)
if probe.unavailable_reason() is None:
    gate = Gate(workspace, GrantStore(workspace.parent / "approvals.toml"))
    gate.grant_family(CODE_FAMILY)
    ctx = ToolContext(workspace=workspace, data_dir=workspace.parent / "data", budget_s=60,
                      services={"gate": gate}, tool="execute_code", risk=execute_code.RISK)
    print(asyncio.run(execute_code.execute({"code": "import sys; print('ran by', sys.prefix)"}, ctx)))
"""


def _install(folder: Path) -> Path:
    """Her checkout and a virtual environment of its own in `folder`; returns its interpreter."""
    checkout = folder / "checkout"
    shutil.copytree(Path(companion.__file__).parent, checkout / "companion",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip",
                    str(checkout / ".venv")], check=True)
    python = checkout / ".venv" / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # The copy's own package first; the packages she depends on from the environment running the tests.
    Path(site, "a_checkout.pth").write_text(f"{checkout}\n")
    Path(site, "b_packages.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n")
    return python


def _run_her(python: Path, workspace: Path) -> str:
    done = subprocess.run([python, "-c", HER, str(workspace)], capture_output=True, text=True, timeout=120,
                          cwd=workspace, env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(params=["mktemp -d", "a folder the sandbox shows"])
def closed_folder(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A folder of mode 700: where `mktemp -d` makes it (/tmp, which the sandbox hides), or as
    root one the sandbox shows as it is (/opt)."""
    if request.param == "mktemp -d":
        folder = Path(tempfile.mkdtemp(prefix="companion-install-"))
    elif os.geteuid() == 0:
        folder = Path(tempfile.mkdtemp(prefix="companion-install-", dir="/opt"))
    else:
        pytest.skip("only root may make a folder outside the sandbox's hidden ones")
    assert (folder.stat().st_mode & 0o777) == 0o700
    yield folder
    shutil.rmtree(folder)


def test_her_sandboxed_tools_work_when_she_is_installed_in_a_folder_of_mode_700(
        closed_folder: Path, tmp_path: Path) -> None:
    python = _install(closed_folder)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    said = _run_her(python, workspace)
    assert "REASON: None" in said and "DOCTOR: True" in said, said
    assert f"ran by {python.parent.parent}" in said and "[exit 0]" in said, said


@as_root
def test_a_file_of_hers_the_sandboxs_user_may_not_read_is_named_with_what_to_do(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="companion-install-"))
    try:
        python = _install(folder)
        helper = folder / "checkout" / "companion" / "safety" / "sandbox" / "landlock.py"
        helper.chmod(0o600)  # a checkout cloned under umask 077
        workspace = tmp_path / "ws"
        workspace.mkdir()
        said = _run_her(python, workspace)
    finally:
        shutil.rmtree(folder)
    reason = said.split("REASON: ", 1)[1].splitlines()[0]
    assert f"may not read {helper} (mode 600, owned by root)" in reason, said
    assert "user namespaces" not in reason, said
    assert f"FIX: Let others read it (chmod o+r {helper})" in said, said
    assert f"DOCTOR: False Let others read it (chmod o+r {helper})" in said, said


def test_a_failed_probe_is_tried_again_later_so_a_fix_brings_the_tools_back_without_a_restart(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    real = probe.find_bwrap()
    assert real is not None
    bin_dir = Path(tempfile.mkdtemp(prefix="companion-bin-", dir="/var/tmp"))
    bin_dir.chmod(0o755)  # bwrap runs as nobody when she is root: it must reach its own program
    request.addfinalizer(lambda: shutil.rmtree(bin_dir))
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: something is wrong here' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(probe, "_probed", {})
    now = [1000.0]
    monkeypatch.setattr(probe, "_now", lambda: now[0])
    reason = probe.unavailable_reason()
    assert reason is not None and "something is wrong here" in reason, reason
    assert "user namespaces" not in reason  # nothing said so
    fake.write_text(f"#!/bin/sh\nexec {real} \"$@\"\n")  # the user fixed it
    assert probe.unavailable_reason() == reason  # not probed again at once on every question
    now[0] += 31
    assert probe.unavailable_reason() is None
    assert probe.commands_allowed()
