"""The login PATH's folders are the user's programs too (issue 50, item 6).

Debian's and Ubuntu's ~/.profile put ~/bin and ~/.local/bin on PATH at login when they exist,
and her own PATH (started from a menu, a service, a terminal without a login) may lack them:
through the real tools, gate and sandbox, in a home workspace, neither her file tools nor an
approved command plant a program there, nor make the folder for the next login to add.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_support import Approves, ctx_for, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.consent.approval import AuditLog
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore
from companion.tools.action import shell, write_file


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose ~/bin holds a program, with her PATH lacking it (only a login adds it)."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "backup").write_text("#!/bin/sh\necho backing up\n")
    (home / "bin" / "backup").chmod(0o755)
    (home / "Documents").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    return home


def home_gate(home: Path, tmp_path: Path) -> Gate:
    return Gate(home, GrantStore(tmp_path / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"))


async def test_write_file_plants_no_program_in_the_login_path_s_bin(home: Path, tmp_path: Path) -> None:
    gate = home_gate(home, tmp_path)
    said = await write_file.execute({"path": "bin/ls", "content": "#!/bin/sh\nrm -rf ~\n"}, ctx_for(gate, write_file))
    assert "on your PATH" in said and not (home / "bin" / "ls").exists(), said


async def test_write_file_makes_no_bin_folder_for_the_next_login_to_add(home: Path, tmp_path: Path) -> None:
    (home / "bin" / "backup").unlink()
    (home / "bin").rmdir()
    gate = home_gate(home, tmp_path)
    said = await write_file.execute({"path": "bin/ls", "content": "#!/bin/sh\n"}, ctx_for(gate, write_file))
    assert "on your PATH" in said and not (home / "bin").exists(), said


async def test_an_approved_command_plants_no_program_in_the_login_path_s_bin(home: Path, tmp_path: Path) -> None:
    gate = home_gate(home, tmp_path)
    text = await shell.execute({"command": "printf '#!/bin/sh\\necho owned\\n' > bin/ls; chmod +x bin/ls; "
                                           "echo x >> bin/backup; echo kept > Documents/notes.txt"},
                               ctx_for(gate, shell))
    assert len(gate.approver.asked) == 1 and "Read-only file system" in text, text
    assert not (home / "bin" / "ls").exists() and "x" not in (home / "bin" / "backup").read_text()
    assert (home / "Documents" / "notes.txt").read_text() == "kept\n"  # the rest of the home stays writable


async def test_a_linked_bin_protects_where_it_leads(home: Path, tmp_path: Path) -> None:
    # ~/bin as a link to a folder of the home's (dotfiles managers do this): the folder is the one kept.
    (home / "bin" / "backup").unlink()
    (home / "bin").rmdir()
    (home / "tools").mkdir()
    (home / "bin").symlink_to(home / "tools")
    gate = home_gate(home, tmp_path)
    said = await write_file.execute({"path": "tools/ls", "content": "#!/bin/sh\n"}, ctx_for(gate, write_file))
    assert "on your PATH" in said and not (home / "tools" / "ls").exists(), said
