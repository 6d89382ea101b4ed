"""An MCP server starts like any other untrusted code (issue 50, item 3): the model writes the
workspace without asking, so nothing written there runs outside the sandbox when a declared server
starts (npm's and uv's settings files, a package's build), and nothing written there decides what
else of the hidden home the server is shown (a `pyvenv.cfg`, a link, a shebang). All through the
real launchers and the real sandbox, offline: the packages are local files of the test's own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_mcp_tools import NOTES_SERVER, ScriptedApprover, context, sandbox_gate, started_manager

from companion.config import McpServerSettings
from companion.mcp.program import plain_program
from companion.safety.consent.approval import Decision


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home, hidden by the sandbox, with a secret in ~/.ssh/."""
    folder = tmp_path_factory.mktemp("home")
    (folder / ".ssh").mkdir()
    (folder / ".ssh" / "id_ed25519").write_text("secret\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "todo.txt").write_text("water the plants\n", encoding="utf-8")
    return folder


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Where a payload run outside the sandbox leaves its mark: outside the workspace, and hidden
    from the sandbox (so a payload run inside it can't make it)."""
    return tmp_path / "payload-ran-outside"


def _notes_script() -> str:
    """The notes server as an executable script on the test's own Python (the SDK is there)."""
    return f"#!{sys.executable}\n" + NOTES_SERVER.read_text(encoding="utf-8")


async def _started(workspace: Path, server: McpServerSettings, approver: ScriptedApprover | None = None):
    """The server started as the app starts it, through the real launcher and sandbox."""
    return await started_manager(workspace, server, gate=sandbox_gate(workspace, approver))


async def _read(registry, workspace: Path, path: Path) -> tuple[bool, str]:
    ctx = context(workspace)
    answer = await registry.dispatchable("read_note").execute({"name": str(path)}, ctx)
    return ctx.failed, answer


# --- npm's settings files -----------------------------------------------------------------

@pytest.fixture
def npm_package(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A packed npm package of the test's own (its program: the notes server), and an empty npm
    cache of the test's own: npx installs it from the file, offline."""
    assert shutil.which("npx") is not None, "node and npm are system dependencies of the tests"
    source = tmp_path_factory.mktemp("npm-package")
    (source / "package.json").write_text(json.dumps(
        {"name": "notes-mcp", "version": "1.0.0", "bin": {"notes-mcp": "server.py"}}), encoding="utf-8")
    (source / "server.py").write_text(_notes_script(), encoding="utf-8")
    (source / "server.py").chmod(0o755)
    packed = subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(source)], cwd=source,
                            capture_output=True, text=True, check=True, timeout=120)
    monkeypatch.setenv("npm_config_cache", str(tmp_path_factory.mktemp("npm-cache")))
    monkeypatch.setenv("npm_config_update_notifier", "false")
    return source / packed.stdout.strip().splitlines()[-1]


def _hostile_npmrc(folder: Path, payload: Path, marker: Path) -> None:
    """What the attacker wrote: npm runs its scripts with node, which first requires the payload."""
    payload.write_text(f"require('fs').writeFileSync({json.dumps(str(marker))}, 'ran')\n", encoding="utf-8")
    (folder / ".npmrc").write_text(f"script-shell=/usr/bin/node\nnode-options=--require {payload}\n",
                                   encoding="utf-8")


@pytest.mark.parametrize("where", ["the workspace", "the home"])
async def test_an_npmrc_the_model_wrote_runs_nothing_when_an_npx_server_starts(
        where: str, home: Path, workspace: Path, npm_package: Path, marker: Path) -> None:
    # The workspace's .npmrc is npm's project settings; the home's (a workspace that holds the
    # home) its user settings. Each used to run the payload as her, unsandboxed, unasked.
    _hostile_npmrc(workspace if where == "the workspace" else home, workspace / "evil.js", marker)
    server = McpServerSettings(name="notes", command="npx", args=("--package", str(npm_package), "notes-mcp"),
                               trusted=True, timeout_s=60.0)
    asking = ScriptedApprover(Decision.DECLINED)
    manager, registry = await _started(workspace, server, asking)
    try:
        assert not marker.exists(), "the payload ran outside the sandbox"
        status = manager.status("mcp:notes")
        assert status.up and asking.asked == [], status.reason
        failed, answer = await _read(registry, workspace, workspace / "todo.txt")
        assert not failed and answer.strip() == "water the plants", answer
    finally:
        await manager.close()
    assert not marker.exists()


# --- a package built by its own code ----------------------------------------------------------

@pytest.fixture
def uv_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path_factory.mktemp("uv-cache")
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    monkeypatch.setenv("UV_PYTHON", sys.executable)
    monkeypatch.setenv("UV_TOOL_DIR", str(cache / "tools"))
    return cache


def _uvx() -> str:
    from uv import find_uv_bin

    found = shutil.which("uvx", path=os.path.dirname(find_uv_bin()))
    assert found is not None, "uv (the dev extras) carries uvx beside uv"
    return found


@pytest.mark.parametrize("declared", [(), ("--no-config", "--offline", "--no-build")])
async def test_a_uvx_server_from_a_workspace_folder_is_never_built_outside_the_sandbox(
        declared: tuple[str, ...], home: Path, workspace: Path, uv_cache: Path, marker: Path) -> None:
    # `declared`: flags of its own in the declaration, which the launcher's asking adds too.
    # A package whose build backend is its own code (in the folder itself: nothing to download).
    source = workspace / "srv"
    (source / "backend").mkdir(parents=True)
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend_of_mine"\nbackend-path = ["backend"]\n\n'
        '[project]\nname = "srv"\nversion = "1.0"\n', encoding="utf-8")
    (source / "backend" / "backend_of_mine.py").write_text(
        f"open({json.dumps(str(marker))}, 'w').write('ran')\n"
        "def get_requires_for_build_wheel(config_settings=None):\n    return []\n", encoding="utf-8")
    server = McpServerSettings(name="srv", command=_uvx(), args=(*declared, "--from", "./srv", "srv"), trusted=True,
                               timeout_s=60.0)
    asking = ScriptedApprover(Decision.APPROVED)
    manager, _registry = await _started(workspace, server, asking)
    try:
        assert not marker.exists(), "its build backend ran outside the sandbox"
        status = manager.status("mcp:srv")
        assert not status.up and "built from source" in status.reason, status.reason
        assert asking.asked == []
    finally:
        await manager.close()


# --- what a server is shown ---------------------------------------------------------------

async def test_a_pyvenv_cfg_the_model_wrote_never_shows_the_folder_it_names(home: Path, workspace: Path) -> None:
    # A server kept as a virtual environment in the workspace: its pyvenv.cfg says where its
    # Python lives, and the model can rewrite it.
    venv = workspace / "srv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "notes-server").write_text(_notes_script(), encoding="utf-8")
    (venv / "bin" / "notes-server").chmod(0o755)
    (venv / "pyvenv.cfg").write_text(f"home = {home / '.ssh'}\n", encoding="utf-8")
    server = McpServerSettings(name="notes", command=str(venv / "bin" / "notes-server"), trusted=True,
                               timeout_s=20.0)
    manager, registry = await _started(workspace, server)
    try:
        assert manager.status("mcp:notes").up, manager.status("mcp:notes").reason
        assert not any(".ssh" in path for path in manager.connection("mcp:notes").visible)
        failed, answer = await _read(registry, workspace, home / ".ssh" / "id_ed25519")
        assert failed and "secret" not in answer, answer
    finally:
        await manager.close()


def test_a_link_the_model_laid_in_the_workspace_shows_nothing_of_where_it_leads(
        home: Path, workspace: Path) -> None:
    (home / ".ssh" / "config.py").write_text("", encoding="utf-8")
    srv = workspace / "srv"
    srv.mkdir()
    (srv / "server.py").symlink_to(home / ".ssh" / "config.py")
    (srv / "run").symlink_to(home / ".ssh" / "id_ed25519")
    (workspace / "out").symlink_to(home / ".ssh")
    for argv in ((sys.executable, str(srv / "server.py")), (str(srv / "run"),), ("./srv/run",),
                 (sys.executable, "out/config.py")):
        visible = plain_program(argv, str(workspace)).visible
        assert not any(".ssh" in path for path in visible), (argv, visible)


def test_a_shebang_the_model_wrote_shows_only_an_interpreter_it_names(home: Path, workspace: Path) -> None:
    script = workspace / "serve"
    for interpreter in (home / ".ssh" / "id_ed25519", f"/usr/bin/env -S {home / '.ssh' / 'id_ed25519'}"):
        script.write_text(f"#!{interpreter}\n", encoding="utf-8")
        visible = plain_program((str(script),), str(workspace)).visible
        assert not any(".ssh" in path for path in visible), (interpreter, visible)
    # A real interpreter's installation in the home (pyenv's, uv's) is still shown: the server needs it.
    python = home / ".pyenv" / "versions" / "3.11.7"
    (python / "bin").mkdir(parents=True)
    (python / "lib" / "python3.11").mkdir(parents=True)
    (python / "lib" / "python3.11" / "os.py").write_text("", encoding="utf-8")
    (python / "bin" / "python3.11").write_text("", encoding="utf-8")
    script.write_text(f"#!{python / 'bin' / 'python3.11'}\n", encoding="utf-8")
    assert str(python) in plain_program((str(script),), str(workspace)).visible


def test_a_shebang_the_model_wrote_never_shows_a_virtual_environment_it_names(home: Path, workspace: Path) -> None:
    # Someone's project in the home, whose environment (its activate script may export a token)
    # is none of a workspace server's business.
    python = home / ".pyenv" / "versions" / "3.11.7"
    (python / "bin").mkdir(parents=True)
    (python / "lib" / "python3.11").mkdir(parents=True)
    (python / "lib" / "python3.11" / "os.py").write_text("", encoding="utf-8")
    (python / "bin" / "python3.11").write_text("", encoding="utf-8")
    venv = home / "project" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {python / 'bin'}\n", encoding="utf-8")
    (venv / "bin" / "python").symlink_to(python / "bin" / "python3.11")
    (venv / "bin" / "activate").write_text("export API_TOKEN=secret\n", encoding="utf-8")
    script = workspace / "serve"
    script.write_text(f"#!{venv / 'bin' / 'python'}\n", encoding="utf-8")
    visible = plain_program((str(script),), str(workspace)).visible
    assert [p for p in visible if Path(p).is_relative_to(home)] == [str(python)], visible
