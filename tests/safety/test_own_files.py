"""Her own files (settings, approvals, memory, plugins) are out of the file tools' reach, even
with the home folder as workspace; a workspace inside her folders is refused at start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import companion
from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.paths import own_paths
from companion.runtime import Companion
from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.gate import build_gate
from companion.safety.jail.jail import OWN_PATHS_SERVICE, OWN_SENTENCE, JailError, check_workspace
from companion.safety.sandbox import probe
from companion.tools.action import patch, read_file, search_files, shell, write_file
from companion.tools.context import ToolContext

OWN_READ = "That's one of my own files, so I can't open it from here."


@pytest.fixture
def home(tmp_path) -> Path:
    """A home folder laid out the way platformdirs lays out hers on Linux, with her files in it."""
    home = tmp_path / "home"
    config = home / ".config" / "companion"
    data = home / ".local" / "share" / "companion"
    (data / "plugins").mkdir(parents=True)
    config.mkdir(parents=True)
    (config / "settings.toml").write_text('[tools]\nworkspace = "~"\n')
    (config / "approvals.toml").write_text("lines = []\nfamilies = []\n")
    (data / "conversations.jsonl").write_text('{"secret": "what we said"}\n')
    (home / "notes.txt").write_text("a note of the user's, about the secret\n")
    return home


def _ctx(home: Path) -> ToolContext:
    config, data = home / ".config" / "companion", home / ".local" / "share" / "companion"
    return ToolContext(workspace=home, data_dir=data, budget_s=10,
                       services={OWN_PATHS_SERVICE: own_paths(config, data)})


async def test_write_file_cannot_drop_a_plugin_into_her_data_folder_from_a_home_workspace(home):
    ctx = _ctx(home)
    said = await write_file.execute(
        {"path": ".local/share/companion/plugins/x.py", "content": "import os\nos.system('id')\n"}, ctx)
    assert said == OWN_SENTENCE and ctx.failed
    assert list((home / ".local/share/companion/plugins").iterdir()) == []


async def test_write_file_and_patch_cannot_rewrite_her_approvals_or_settings(home):
    config = home / ".config" / "companion"
    before = {name: (config / name).read_text() for name in ("approvals.toml", "settings.toml")}
    grant = await write_file.execute(
        {"path": str(config / "approvals.toml"), "content": 'lines = ["rm --r -f sub"]\n'}, _ctx(home))
    server = await patch.execute(
        {"path": str(config / "settings.toml"), "old_text": 'workspace = "~"\n',
         "new_text": 'workspace = "~"\n[[mcp.servers]]\nname = "x"\ncommand = "sh"\nnetwork = true\n'},
        _ctx(home))
    assert grant == OWN_SENTENCE and server == OWN_SENTENCE
    assert {name: (config / name).read_text() for name in before} == before


async def test_a_link_in_the_workspace_into_her_folders_is_refused_too(home):
    (home / "innocent").symlink_to(".config/companion")
    (home / "plugins_here").symlink_to(home / ".local/share/companion/plugins")
    written = await write_file.execute({"path": "innocent/approvals.toml", "content": "lines = []\n"}, _ctx(home))
    dropped = await write_file.execute({"path": "plugins_here/x.py", "content": "print(1)\n"}, _ctx(home))
    read = await read_file.execute({"path": "innocent/settings.toml"}, _ctx(home))
    assert written == dropped == OWN_SENTENCE
    assert read == OWN_READ
    assert list((home / ".local/share/companion/plugins").iterdir()) == []


async def test_read_and_search_leave_her_files_out_but_still_read_the_users(home):
    read = await read_file.execute({"path": ".local/share/companion/conversations.jsonl"}, _ctx(home))
    found = await search_files.execute({"query": "secret"}, _ctx(home))
    inside = await search_files.execute({"query": "secret", "path": ".local/share/companion"}, _ctx(home))
    assert read == OWN_READ and inside == OWN_READ
    assert found.splitlines() == ["Found 1 match for 'secret':", "notes.txt:1: a note of the user's, about the secret"]


async def test_her_data_folder_is_hers_even_when_nothing_else_lists_it(home):
    # A context built without the runtime's list (a tool test, a bench) still keeps data_dir out.
    data = home / ".local" / "share" / "companion"
    bare = ToolContext(workspace=home, data_dir=data)
    said = await write_file.execute({"path": ".local/share/companion/plugins/x.py", "content": "x = 1\n"}, bare)
    assert said == OWN_SENTENCE


async def test_a_search_of_a_workspace_holding_a_visible_config_folder_skips_it(tmp_path):
    # --config-dir may be a plain (not hidden) folder inside the workspace.
    workspace = tmp_path / "ws"
    config = workspace / "profile"
    (config / "data").mkdir(parents=True)
    (config / "approvals.toml").write_text("lines = ['needle']\n")
    (workspace / "mine.txt").write_text("needle\n")
    ctx = ToolContext(workspace=workspace, data_dir=config / "data",
                      services={OWN_PATHS_SERVICE: own_paths(config, config / "data")})
    found = await search_files.execute({"query": "needle"}, ctx)
    assert found.splitlines() == ["Found 1 match for 'needle':", "mine.txt:1: needle"]


async def test_her_own_code_is_hers_too_when_the_workspace_holds_it(tmp_path):
    # Her package (and her virtual environment) runs in her process: a workspace that holds it
    # (a source checkout, a home with a venv) must not let a tool change it. Read-only probe:
    # a failure of this test never changes her code.
    package = Path(companion.__file__).resolve().parent
    paths = Paths.default(tmp_path / "config")
    running = Companion(RunConfig(paths, with_overrides(Settings(), tools={"workspace": str(package.parent)})))
    ctx = ToolContext(workspace=package.parent, data_dir=paths.data_dir,
                      services={OWN_PATHS_SERVICE: running._own_paths()})
    assert await read_file.execute({"path": "companion/tools/action/shell.py"}, ctx) == OWN_READ
    assert await patch.execute({"path": "companion/__init__.py", "old_text": "never there \x01",
                                "new_text": "x"}, ctx) == OWN_SENTENCE


def test_a_workspace_inside_her_folders_is_refused_with_a_fix(tmp_path):
    config, data = tmp_path / "config", tmp_path / "data"
    for inside in (config, config / "sub", data / "plugins"):
        with pytest.raises(JailError) as refused:
            check_workspace(inside, own_paths(config, data))
        assert refused.value.code == "workspace_is_mine"
        assert "Choose another folder with --workspace or in Settings" in refused.value.sentence
    check_workspace(tmp_path, own_paths(config, data))  # containing them is fine


async def test_companion_start_refuses_a_workspace_inside_her_config_folder(tmp_path):
    paths = Paths.default(tmp_path / "config")
    settings = with_overrides(Settings(), tools={"workspace": str(paths.config_dir / "files")})
    companion = Companion(RunConfig(paths, settings))
    with pytest.raises(JailError, match="where I keep my own files"):
        await companion.start()
    assert not (paths.config_dir / "files").exists()


class Approves:
    """Says yes (once) to every card."""

    async def ask(self, request: ApprovalRequest) -> Answer:
        return Answer(Decision.APPROVED)


async def test_an_approved_command_in_a_home_workspace_sees_none_of_her_folders(home, monkeypatch):
    # The gate the runtime builds hides the same folders the jail refuses (state and cache too).
    assert probe.unavailable_reason() is None, probe.unavailable_reason()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    state, cache = home / ".local" / "state" / "companion", home / ".cache" / "companion"
    state.mkdir(parents=True)
    cache.mkdir(parents=True)
    (state / "companion.log").write_text("a secret in her log\n")
    (home / "Documents").mkdir()  # the home's own top is read-only to commands (sandbox.py)
    config, data = home / ".config" / "companion", home / ".local" / "share" / "companion"
    gate = build_gate(home, config / "approvals.toml", data, approver=Approves())
    ctx = ToolContext(workspace=home, data_dir=data, budget_s=30, services={"gate": gate},
                      tool="shell", risk=shell.RISK)
    text = await shell.execute({"command": "cat .local/state/companion/companion.log; "
                                           "echo x > .cache/companion/planted; echo mine > Documents/note.txt"}, ctx)
    await gate.close()
    assert "a secret in her log" not in text, text
    assert not (cache / "planted").exists()
    assert (home / "Documents" / "note.txt").read_text() == "mine\n"


def _chat(home: Path, url: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`companion chat` as a user whose home is `home` (her folders where platformdirs puts them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(home)
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", url, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, env=env, input=stdin)


def test_companion_chat_with_the_home_folder_as_workspace_cannot_reach_her_config_grants_or_plugins(
        home, scripted_brain):
    config = home / ".config" / "companion"
    before = {name: (config / name).read_text() for name in ("approvals.toml", "settings.toml")}
    attacks = [
        ("write_file", {"path": ".local/share/companion/plugins/x.py", "content": "open('/tmp/owned', 'w')\n"}),
        ("write_file", {"path": ".config/companion/approvals.toml", "content": 'lines = ["rm --r -f sub"]\n'}),
        ("patch", {"path": "~/.config/companion/settings.toml", "old_text": "[tools]",
                   "new_text": '[[mcp.servers]]\nname = "x"\ncommand = "sh"\nnetwork = true\n[tools]'}),
        ("write_file", {"path": "mine.txt", "content": "the user's own\n"}),
    ]
    for name, arguments in attacks:  # one turn each: a turn stops calling tools after two failures
        scripted_brain.push({"tool_calls": [{"name": name, "arguments": arguments}]}, {"text": "[neutral] Done."})
    done = _chat(home, scripted_brain.url, "--workspace", str(home), stdin="go\n" * len(attacks))
    assert done.returncode == 0, done.stderr
    results = [m["content"] for m in scripted_brain.bodies[-1]["messages"] if m["role"] == "tool"]
    assert [OWN_SENTENCE in result for result in results] == [True, True, True, False], results
    assert results[3] == "Created mine.txt: 15 bytes, 1 line."
    assert {name: (config / name).read_text() for name in before} == before
    assert list((home / ".local/share/companion/plugins").iterdir()) == []


def test_companion_chat_refuses_to_start_in_a_workspace_inside_her_config_folder(home, unused_port):
    done = _chat(home, f"http://127.0.0.1:{unused_port}/v1", "--workspace", str(home / ".config" / "companion"),
                 "--once", "hello")
    assert done.returncode == 1
    said = done.stderr.strip().splitlines()
    assert said[-1].startswith("companion: I couldn't start: My workspace ")
    assert "Choose another folder with --workspace or in Settings" in said[-1]
    assert "Traceback" not in done.stderr
