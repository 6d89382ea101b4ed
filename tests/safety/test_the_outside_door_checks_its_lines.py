"""The only runs outside the sandbox (a package launcher asked where a declared server's package
is, and its one download) check their own line (issue 50, item 3's rest): whatever builds the
line, nothing in it may read a file the model could have written, build a package, or run from
the workspace. Refused before anything starts, with a sentence; through the real launchers too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.mcp import launchers
from companion.safety.sandbox import outside

PRINT = [outside.PRINTENV, "PATH"]
UVX_OURS = ["--no-config", "--offline", "--no-build"]
NPX_OURS = ["--userconfig=/dev/null/userconfig", "--globalconfig=/dev/null/globalconfig", "--ignore-scripts",
            "--yes", "--offline", "--"]


@pytest.mark.parametrize(("argv", "cwd", "said"), [
    (["uvx", *UVX_OURS, "--from", "srv", *PRINT], "/work", "only from /"),
    (["uvx", "--offline", "--no-build", "--from", "srv", *PRINT], "/", "--no-config"),
    (["uvx", "--no-config", "--offline", "--from", "srv", *PRINT], "/", "--no-build"),
    (["uvx", *UVX_OURS, "--with-requirements", "/ws/req.txt", "--from", "srv", *PRINT], "/", "--with-requirements"),
    (["uvx", *UVX_OURS, "--config-file=/ws/uv.toml", "--from", "srv", *PRINT], "/", "--config-file"),
    (["uvx", *UVX_OURS, "-c", "/ws/constraints.txt", "--from", "srv", *PRINT], "/", "-c names a file"),
    (["uvx", *UVX_OURS, "--directory", "/ws", "--from", "srv", *PRINT], "/", "--directory"),
    (["uvx", *UVX_OURS, "--python", "/ws/.venv/bin/python", "--from", "srv", *PRINT], "/", "interpreter"),
    (["uvx", *UVX_OURS, "--from", "git+file:///ws/repo", *PRINT], "/", "git+file:"),
    (["npx", "--package", "git+file:///ws/repo", *NPX_OURS, *PRINT], "/", "git+file:"),
    (["npx", "--package", "x", "--script-shell=/usr/bin/node", *NPX_OURS, *PRINT], "/", "--script-shell"),
    (["npx", "-c", "sh evil.sh", "--package", "x", *NPX_OURS, *PRINT], "/", "-c isn't one"),
    (["npx", "--package", "x", "--yes", "--offline", "--", *PRINT], "/", "no settings files"),
    (["npx", "--package", "x", *NPX_OURS[:2], "--userconfig=/ws/.npmrc", *NPX_OURS[2:], *PRINT], "/",
     "no settings files"),
])
async def test_the_door_outside_the_sandbox_refuses_a_launcher_line_that_could_read_what_the_model_wrote(
        argv: list[str], cwd: str, said: str) -> None:
    with pytest.raises(outside.OutsideRefused) as refused:
        await outside.ask_where(argv, cwd, 5.0)
    assert said in refused.value.sentence, refused.value.sentence


@pytest.mark.parametrize("args", [
    ("--with-requirements", "req.txt", "srv"),
    ("--config-file", "uv.toml", "srv"),
    ("--from", "git+file://{ws}/repo", "srv"),
])
async def test_a_declared_uvx_server_naming_a_workspace_file_is_refused_before_anything_runs(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "req.txt").write_text("-e ./srv\n")
    (ws / "uv.toml").write_text("[pip]\nindex-url = 'http://127.0.0.1:9/'\n")
    argv = ("uvx", *(a.format(ws=ws) for a in args))
    with pytest.raises(launchers.LauncherError) as refused:
        await launchers.resolve(argv, str(ws))
    assert "I won't start it that way" in refused.value.sentence, refused.value.sentence
