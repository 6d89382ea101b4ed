"""An MCP server kept in the home folder, which the sandbox hides: it runs, and sees of the home
only its own program and files, read-only (issue 38)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from test_mcp_tools import NOTES_SERVER, context, started_manager

from companion.config import McpServerSettings
from companion.mcp.program import describe, plain_program


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with a server kept in ~/mcp/ beside a secret in ~/.ssh/ (apart from her own
    folders, which the test gate keeps in tmp_path: those stay hidden whatever lives in them)."""
    folder = tmp_path_factory.mktemp("home")
    (folder / "mcp").mkdir(parents=True)
    shutil.copy(NOTES_SERVER, folder / "mcp" / "notes_server.py")
    (folder / "mcp" / "README").write_text("its own\n", encoding="utf-8")
    (folder / ".ssh").mkdir()
    (folder / ".ssh" / "id_ed25519").write_text("secret\n", encoding="utf-8")
    (folder / "Documents").mkdir()
    (folder / "Documents" / "diary.txt").write_text("private\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(folder))
    return folder


async def test_a_server_kept_as_a_script_in_the_home_runs_and_sees_only_its_own_folder_read_only(
        home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = home / "mcp" / "notes_server.py"
    server = McpServerSettings(name="notes", command=sys.executable, args=(str(script),), trusted=True,
                               timeout_s=20.0)
    manager, registry = await started_manager(workspace, server)
    try:
        read, append = registry.dispatchable("read_note"), registry.dispatchable("append_note")
        assert read is not None, manager.status("mcp:notes").reason
        assert (await read.execute({"name": str(home / "mcp" / "README")}, context(workspace))).strip() == "its own"
        for secret in (home / ".ssh" / "id_ed25519", home / "Documents" / "diary.txt"):
            ctx = context(workspace)
            answer = await read.execute({"name": str(secret)}, ctx)
            assert ctx.failed and "secret" not in answer and "private" not in answer, answer
        ctx = context(workspace)
        await append.execute({"name": str(home / "mcp" / "README"), "text": "changed"}, ctx)
        assert ctx.failed and (home / "mcp" / "README").read_text(encoding="utf-8") == "its own\n"
        note = manager.notes()["mcp:notes"]
        assert "~/mcp" in note and ".ssh" not in note and "Documents" not in note, note
    finally:
        await manager.close()


def test_what_a_server_will_see_is_said_before_it_starts_and_never_is_the_whole_home(home: Path) -> None:
    script = home / "mcp" / "notes_server.py"
    said = describe([sys.executable, str(script)])
    assert "~/mcp" in said and ".ssh" not in said, said
    # A script kept right in the home is shown alone: never the home itself.
    shutil.copy(NOTES_SERVER, home / "server.py")
    program = plain_program((sys.executable, str(home / "server.py")), str(home))
    assert all(os.path.realpath(home) != p for p in program.visible), program
    # A path among its arguments that is not its script is the user's data: it stays hidden.
    assert plain_program((sys.executable, str(script), str(home / ".ssh" / "id_ed25519")), str(home)).visible == \
        plain_program((sys.executable, str(script)), str(home)).visible
    assert "uv's cache" in describe(["uvx", "mcp-server-time"])
    assert "npm's cache" in describe(["npx", "-y", "@modelcontextprotocol/server-memory"])


def test_a_virtual_environment_in_the_home_is_shown_with_its_interpreter(home: Path) -> None:
    venv = home / "servers" / ".venv"
    (venv / "bin").mkdir(parents=True)
    base = home / ".pyenv" / "versions" / "3.11.7"
    (base / "bin").mkdir(parents=True)
    (base / "lib" / "python3.11").mkdir(parents=True)
    (base / "lib" / "python3.11" / "os.py").write_text("", encoding="utf-8")
    (base / "bin" / "python3.11").write_text("", encoding="utf-8")
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\n", encoding="utf-8")
    (venv / "bin" / "python").symlink_to(base / "bin" / "python3.11")
    entry = venv / "bin" / "my-server"
    entry.write_text(f"#!{venv / 'bin' / 'python'}\nimport my_server\n", encoding="utf-8")
    entry.chmod(0o755)
    visible = plain_program((str(entry),), str(home)).visible
    assert str(venv) in visible and str(base) in visible, visible
    assert not any(p in (str(home), str(home / "servers")) for p in visible), visible
