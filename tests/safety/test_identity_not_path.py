"""Her files and the user's programs out of reach by identity, not by path (issue 33, item 4).

Through the real tools, gate and sandbox: a home-folder workspace whose ~/bin is on PATH, a hard
link in the workspace to her approvals.toml or to a file outside, and her settings folder
mounted a second time inside the workspace.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from sandbox_support import Approves, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.consent.approval import AuditLog
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore
from companion.safety.jail.jail import OWN_PATHS_SERVICE, OWN_READ_SENTENCE, PROGRAM_SENTENCE
from companion.tools.action import read_file, search_files, shell, write_file
from companion.tools.context import ToolContext


def ctx(gate: Gate, module, own: tuple[Path, ...] = ()) -> ToolContext:
    return ToolContext(workspace=gate.workspace, data_dir=gate.workspace.parent / "data", budget_s=60,
                       services={"gate": gate, OWN_PATHS_SERVICE: own}, tool=module.SCHEMA["name"], risk=module.RISK)


async def call(gate: Gate, module, args: dict, own: tuple[Path, ...] = ()) -> str:
    return await module.execute(args, ctx(gate, module, own))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with ~/bin on PATH, a stray script, and a project with its own repository."""
    home = tmp_path / "home"
    for folder in ("bin", "scripts", "projects/app/.git"):
        (home / folder).mkdir(parents=True)
    for path, text in (("bin/backup", "#!/bin/sh\necho backing up\n"), ("scripts/sync.sh", "#!/bin/sh\necho sync\n"),
                       ("projects/app/run.sh", "#!/bin/sh\necho run\n")):
        (home / path).write_text(text)
        (home / path).chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{home / 'bin'}:{os.environ['PATH']}")
    return home


async def test_in_a_home_workspace_write_file_leaves_the_user_s_programs_alone(home: Path, tmp_path: Path) -> None:
    gate = Gate(home, GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))
    said = await call(gate, write_file, {"path": "bin/backup", "content": "#!/bin/sh\nrm -rf ~\n"})
    assert "on your PATH" in said and "backing up" in (home / "bin" / "backup").read_text(), said
    said = await call(gate, write_file, {"path": "bin/ls", "content": "#!/bin/sh\n"})
    assert "on your PATH" in said and not (home / "bin" / "ls").exists(), said
    said = await call(gate, write_file, {"path": "scripts/sync.sh", "content": "#!/bin/sh\nrm -rf ~\n"})
    assert said == PROGRAM_SENTENCE and "echo sync" in (home / "scripts" / "sync.sh").read_text(), said
    # A project's own script is the project's: she may change it.
    said = await call(gate, write_file, {"path": "projects/app/run.sh", "content": "#!/bin/sh\necho new\n"})
    assert (home / "projects" / "app" / "run.sh").read_text() == "#!/bin/sh\necho new\n", said


async def test_in_a_home_workspace_an_approved_command_cannot_plant_a_program_on_path(home: Path, tmp_path: Path) -> None:
    gate = Gate(home, GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))
    text = await call(gate, shell, {"command": "printf '#!/bin/sh\\necho owned\\n' > bin/ls; chmod +x bin/ls; "
                                               "echo x >> bin/backup; echo kept > projects/notes.txt"})
    assert len(gate.approver.asked) == 1 and "Read-only file system" in text, text
    assert not (home / "bin" / "ls").exists() and "x" not in (home / "bin" / "backup").read_text()
    assert (home / "projects" / "notes.txt").read_text() == "kept\n"  # its visible folders stay writable


def make_her_config(tmp_path: Path) -> Path:
    config = tmp_path / "her-config"
    config.mkdir()
    (config / "approvals.toml").write_text('lines = ["echo safe"]\n')
    return config


async def test_a_hard_link_to_her_approvals_neither_shows_them_nor_lets_a_command_rewrite_them(
        tmp_path: Path) -> None:
    config = make_her_config(tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    approvals = config / "approvals.toml"
    os.link(approvals, workspace / "notes.toml")  # made by the user, say, long ago
    gate = Gate(workspace, GrantStore(approvals), approver=Approves(), audit=AuditLog(tmp_path / "approvals.log"),
                hidden=(config,))
    said = await call(gate, read_file, {"path": "notes.toml"}, own=(config,))
    assert "echo safe" not in said and "hard link" in said, said
    text = await call(gate, shell, {"command": "echo 'lines = [\"rm -rf /\"]' > notes.toml; cat notes.toml"},
                      own=(config,))
    assert "rm -rf" in text  # it wrote through the other name…
    assert approvals.read_text() == 'lines = ["echo safe"]\n'  # …into a copy she no longer reads
    assert gate.grants.current().lines == ("echo safe",)


async def test_a_hard_link_to_a_file_outside_is_not_read_or_searched(gate: Gate, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the secret outside\n")
    os.link(outside / "secret.txt", gate.workspace / "secret.txt")
    (gate.workspace / "plain.txt").write_text("the secret inside\n")
    said = await call(gate, read_file, {"path": "secret.txt"})
    assert "the secret outside" not in said and "hard link" in said, said
    found = await call(gate, search_files, {"query": "the secret"})
    assert "plain.txt" in found and "outside" not in found, found


@pytest.mark.skipif(os.geteuid() != 0, reason="a second mount of her folder needs root to make")
async def test_her_folder_mounted_again_inside_the_workspace_is_still_hers(tmp_path: Path) -> None:
    config = make_her_config(tmp_path)
    workspace = tmp_path / "ws"
    (workspace / "cfg").mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(config), str(workspace / "cfg")], check=True)
    try:
        gate = Gate(workspace, GrantStore(config / "approvals.toml"), approver=Approves(),
                    audit=AuditLog(tmp_path / "approvals.log"), hidden=(config,))
        said = await call(gate, read_file, {"path": "cfg/approvals.toml"}, own=(config,))
        assert said == OWN_READ_SENTENCE, said
        text = await call(gate, shell, {"command": "cat cfg/approvals.toml; echo 'lines = [\"x\"]' > cfg/approvals.toml"},
                          own=(config,))
        assert "echo safe" not in text, text
        assert (config / "approvals.toml").read_text() == 'lines = ["echo safe"]\n'
    finally:
        subprocess.run(["umount", str(workspace / "cfg")], check=True)
