"""The only runs outside the sandbox: a package launcher (uvx, npx) asked about a declared MCP
server's package, and that package's one download after a yes.

Both launchers write their cache on every start, so they can't run in a sandbox that shows it
read-only (companion/mcp/launchers.py). Outside it they run only this way:
- `ask_where`: offline, the launcher runs `/usr/bin/printenv PATH` in the package's environment, a
  system program, never anything of the package (the line must end so, or nothing runs);
- `download`: online, only for an allowed verdict of `Gate.review_download` (the user's yes on a
  card that says it needs the internet), with the package's code kept from running: uv installs
  wheels only (`--no-build`), npm runs no install scripts (`npm_config_ignore_scripts`).

This door checks the launcher's line itself, whoever built it (`_check`): it runs in `/` only;
uvx with `--no-config --no-build` and none of the options that read a file the model may have
written (`--with-requirements`, `--constraints`, `--overrides`, `--build-constraints`,
`--env-file`, `--config-file`) or move it into a project (`--directory`, `--project`), nor an
interpreter named by a path; npx with only the options listed in `_NPX_ALLOWED` and ours last
(`--ignore-scripts`, npm's user and global settings at paths that can't hold a file); neither
with a package from this machine's git or a `file:` URL (git would read a repository the model
may have written, outside the sandbox).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence

from companion.errors import CompanionError, Stage

__all__ = ["PRINTENV", "OutsideRefused", "ask_where", "download"]

PRINTENV = "/usr/bin/printenv"
_LAUNCHERS = ("uvx", "npx")
_NO_CODE = {"npm_config_ignore_scripts": "true", "npm_config_update_notifier": "false"}
NEUTRAL = "/"
"""The only folder a launcher runs in here: no project settings there, and none can be put there."""
_UVX_FILES = frozenset({"--with-requirements", "-c", "--constraints", "--overrides", "--build-constraints",
                        "--env-file", "--config-file", "--directory", "--project"})
_UVX_REQUIRED = ("--no-config", "--no-build")
_NPX_SETTINGS = ("--userconfig=/dev/null/userconfig", "--globalconfig=/dev/null/globalconfig")
_NPX_ALLOWED = frozenset({"-p", "--package", "--registry", "-y", "--yes", "--no", "--offline", "--prefer-online",
                          "--prefer-offline", "--ignore-scripts", "--userconfig", "--globalconfig", "--"})
_NPX_VALUE = frozenset({"-p", "--package", "--registry"})


class OutsideRefused(CompanionError):
    """It would not run that outside the sandbox, or the launcher could not start."""

    stage = Stage.SAFETY


async def ask_where(argv: Sequence[str], cwd: str, timeout_s: float) -> tuple[int, str, str]:
    """Run the launcher offline to print the package environment's PATH: (exit, stdout, stderr)."""
    _check(argv, cwd)
    if "--offline" not in argv:
        raise OutsideRefused("online", "Asking a launcher where a package is happens offline only.")
    return await _run(argv, cwd, timeout_s, {})


async def download(verdict: object, argv: Sequence[str], cwd: str, timeout_s: float) -> tuple[int, str, str]:
    """The package's one download, online, for the user's yes (`verdict` from Gate.review_download)."""
    _check(argv, cwd)
    if not getattr(verdict, "allowed", False) or getattr(verdict, "how", "") != "asked":
        raise OutsideRefused("not_approved", "That download wasn't approved, so I didn't start it.")
    if os.path.basename(argv[0]) == "uvx" and "--no-build" not in argv:
        raise OutsideRefused("builds", "A uvx download outside the sandbox installs wheels only.")
    return await _run(argv, cwd, timeout_s, _NO_CODE)


def _check(argv: Sequence[str], cwd: str) -> None:
    if not argv or os.path.basename(argv[0]) not in _LAUNCHERS or list(argv[-2:]) != [PRINTENV, "PATH"]:
        raise OutsideRefused("not_a_launcher", "Only a package launcher asked where a package is runs "
                             "outside the sandbox.")
    if cwd != NEUTRAL:
        raise OutsideRefused("project", "A package launcher runs outside the sandbox only from /, where no "
                             "project settings can be.")
    words = list(argv[1:-2])
    if any("file:" in word.lower() for word in words):
        raise OutsideRefused("local_source", "A package from a file: or git+file: address would be read "
                             "outside the sandbox from a folder I can write, so I won't start it that way.")
    if os.path.basename(argv[0]) == "uvx":
        _check_uvx(words)
    else:
        _check_npx(words)


def _check_uvx(words: list[str]) -> None:
    for i, word in enumerate(words):
        option, _eq, value = word.partition("=")
        if option in _UVX_FILES:
            raise OutsideRefused("uv_file", f"uvx's {option} names a file or folder that would be read outside "
                                 "the sandbox, so I won't start it that way.")
        if option in ("-p", "--python"):
            value = value or (words[i + 1] if i + 1 < len(words) else "")
            if "/" in value and not value.startswith("/usr/"):
                raise OutsideRefused("uv_python", "uvx would run the interpreter at that path outside the "
                                     "sandbox, so I won't start it that way.")
    if not all(flag in words for flag in _UVX_REQUIRED):
        raise OutsideRefused("uv_flags", "uvx runs outside the sandbox only with --no-config and --no-build.")


def _check_npx(words: list[str]) -> None:
    i = 0
    while i < len(words):
        option = words[i].partition("=")[0]
        if option not in _NPX_ALLOWED:
            raise OutsideRefused("npm_option", f"npx's {words[i][:40]} isn't one I let run outside the sandbox.")
        i += 2 if words[i] in _NPX_VALUE else 1
    configs = [w for w in words if w.startswith(("--userconfig", "--globalconfig"))]
    if configs[-2:] != list(_NPX_SETTINGS) or "--ignore-scripts" not in words or words[-1:] != ["--"]:
        raise OutsideRefused("npm_flags", "npx runs outside the sandbox only with no settings files and "
                             "no install scripts.")


async def _run(argv: Sequence[str], cwd: str, timeout_s: float, extra: dict[str, str]) -> tuple[int, str, str]:
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env={**os.environ, **extra}, start_new_session=True)
    except OSError as exc:
        raise OutsideRefused("no_launcher", f"{argv[0]} could not start ({exc.strerror or exc}).") from exc
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=timeout_s)
    except (TimeoutError, asyncio.CancelledError):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        await process.wait()
        raise
    return process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")
