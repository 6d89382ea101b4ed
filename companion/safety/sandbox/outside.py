"""The only runs outside the sandbox: a package launcher (uvx, npx) asked about a declared MCP
server's package, and that package's one download after a yes.

Both launchers write their cache on every start, so they can't run in a sandbox that shows it
read-only (companion/mcp/launchers.py). Outside it they run only this way:
- `ask_where`: offline, the launcher runs `/usr/bin/printenv PATH` in the package's environment, a
  system program, never anything of the package (the line must end so, or nothing runs);
- `download`: online, only for an allowed verdict of `Gate.review_download` (the user's yes on a
  card that says it needs the internet), with the package's code kept from running: uv installs
  wheels only (`--no-build`), npm runs no install scripts (`npm_config_ignore_scripts`).
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


class OutsideRefused(CompanionError):
    """It would not run that outside the sandbox, or the launcher could not start."""

    stage = Stage.SAFETY


async def ask_where(argv: Sequence[str], cwd: str, timeout_s: float) -> tuple[int, str, str]:
    """Run the launcher offline to print the package environment's PATH: (exit, stdout, stderr)."""
    _check(argv)
    if "--offline" not in argv:
        raise OutsideRefused("online", "Asking a launcher where a package is happens offline only.")
    return await _run(argv, cwd, timeout_s, {})


async def download(verdict: object, argv: Sequence[str], cwd: str, timeout_s: float) -> tuple[int, str, str]:
    """The package's one download, online, for the user's yes (`verdict` from Gate.review_download)."""
    _check(argv)
    if not getattr(verdict, "allowed", False) or getattr(verdict, "how", "") != "asked":
        raise OutsideRefused("not_approved", "That download wasn't approved, so I didn't start it.")
    if os.path.basename(argv[0]) == "uvx" and "--no-build" not in argv:
        raise OutsideRefused("builds", "A uvx download outside the sandbox installs wheels only.")
    return await _run(argv, cwd, timeout_s, _NO_CODE)


def _check(argv: Sequence[str]) -> None:
    if not argv or os.path.basename(argv[0]) not in _LAUNCHERS or list(argv[-2:]) != [PRINTENV, "PATH"]:
        raise OutsideRefused("not_a_launcher", "Only a package launcher asked where a package is runs "
                             "outside the sandbox.")


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
