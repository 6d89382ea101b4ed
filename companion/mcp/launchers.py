"""Servers published for `uvx` and `npx`: the package found in the launcher's cache, run from there.

Both launchers write their cache on every start (uv takes a lock file in it, npx its logs), so
they can't run in a sandbox that shows the cache read-only. Instead the launcher is asked, outside
the sandbox and offline, where the package's environment is: it runs only a system program of
ours (`/usr/bin/printenv PATH`) in that environment, never anything of the package, whose folder
comes first on that PATH. The sandbox then runs the package's own program from there, with that
one folder of the cache (and the interpreter it uses) shown read-only, and nothing else of it.

A package not in the cache yet must be downloaded once, outside the sandbox, online: only after
the user's yes on a card, and without running any of the package's code (uv: wheels only,
`--no-build`; npm: `--ignore-scripts`). A package that needs building or an install script to
work is refused with a sentence saying so, since that would run its code outside the sandbox.

Outside the sandbox nothing the model can write steers a launcher: the asking and the download
run in `/` (a folder only root can write, with no folder above it), never the workspace, whose
`.npmrc`, `uv.toml`, `pyproject.toml`, `.python-version` or `node_modules` npm and uv would read
as the project's; with the user's and the system's settings files off too (a workspace holding
the home holds `~/.npmrc` and `~/.config/uv/`): uv with `--no-config`, npm with its user and
global settings at paths that can never hold a file. Asking builds nothing either (`--no-build`,
`--ignore-scripts`): a package from a folder would otherwise be built by its own code on the
spot. A relative path in a declaration still means one in the workspace.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from companion.errors import CompanionError, Stage
from companion.mcp.program import LAUNCHERS, ServerProgram, installation_of, plain_program, shown
from companion.safety.sandbox import outside

__all__ = ["DOWNLOAD_TIMEOUT_S", "LauncherError", "NeedsDownload", "download", "download_line",
           "launcher_of", "resolve"]

DOWNLOAD_TIMEOUT_S = 300.0
_PROBE_TIMEOUT_S = 60.0
# uvx options that take a value (`uvx --help`); any other word starting with "-" is a flag.
_UVX_VALUES = frozenset({
    "--from", "-w", "--with", "--with-editable", "--with-requirements", "-c", "--constraints", "-b",
    "--build-constraints", "--overrides", "--env-file", "--python-platform", "--torch-backend", "--index",
    "--default-index", "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--index-strategy",
    "--keyring-provider", "-P", "--upgrade-package", "--upgrade-group", "--resolution", "--prerelease",
    "--prerelease-package", "--fork-strategy", "--exclude-newer", "--exclude-newer-package",
    "--no-sources-package", "--reinstall-package", "--link-mode", "-C", "--config-setting",
    "--config-settings-package", "--no-build-isolation-package", "--no-build-package",
    "--no-binary-package", "--cache-dir", "--refresh-package", "-p", "--python", "--color",
    "--allow-insecure-host", "--directory", "--project", "--config-file"})
_NPX_VALUES = frozenset({"-p", "--package", "--registry", "--cache", "--userconfig", "-c", "--call"})
_NOT_CACHED = ("not found in the cache", "network was disabled", "ENOTCACHED", "only-if-cached")
NEUTRAL = "/"
"""Where a launcher runs outside the sandbox: no project settings there, and none can be put there."""
# Settings files npm reads besides the project's: at paths no file can ever be at (below a device).
_NO_NPM_SETTINGS = ("--userconfig=/dev/null/userconfig", "--globalconfig=/dev/null/globalconfig")
# Options whose value names the package, and may be a path (relative to the workspace).
_UVX_PACKAGE = frozenset({"--from", "-w", "--with", "--with-editable", "--with-requirements"})
_NPX_PACKAGE = frozenset({"-p", "--package"})
_UVX_OURS = frozenset({"--no-config", "--offline", "--no-build"})


class LauncherError(CompanionError):
    """The launcher could not say where the package is (`sentence` says why)."""

    stage = Stage.TOOLS


class NeedsDownload(LauncherError):
    """The package isn't in the launcher's cache yet: it must be downloaded once, online."""


def launcher_of(argv: Sequence[str]) -> str | None:
    """"uvx" or "npx" when the server is started through one of them, else None."""
    name = os.path.basename(argv[0]) if argv else ""
    return name if name in LAUNCHERS else None


def _split(argv: Sequence[str], values: frozenset[str]) -> tuple[list[str], str, list[str]]:
    """(the launcher's options, the package or command, the server's own arguments)."""
    options: list[str] = []
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-"):
            break
        options.append(word)
        if word in values and i + 1 < len(argv):
            options.append(argv[i + 1])
            i += 1
        i += 1
    if i >= len(argv):
        raise LauncherError("no_package", f"'{shlex.join(argv)}' names no package to run.")
    return options, argv[i], list(argv[i + 1:])


def _uvx_parts(argv: Sequence[str]) -> tuple[list[str], str, list[str]]:
    """(the probe's words after uvx, the program's name, its arguments)."""
    options, target, rest = _split(argv, _UVX_VALUES)
    if "--from" in options or any(o.startswith("--from=") for o in options):
        return options, target, rest
    name = target.split("@", 1)[0].split("[", 1)[0]
    for mark in ("==", ">=", "<=", "~=", "!=", ">", "<"):
        name = name.split(mark, 1)[0]
    spec = target.replace("@", "==", 1) if "@" in target and not target.endswith("@latest") else \
        target.removesuffix("@latest")
    return [*options, "--from", spec], name, rest


def _npx_parts(argv: Sequence[str]) -> tuple[list[str], str | None, list[str]]:
    """(the probe's words after npx, the program's name (None: the package's own), its arguments)."""
    options, target, rest = _split(argv, _NPX_VALUES)
    keep = [o for o in options if o not in ("-y", "--yes", "--no", "--offline", "--prefer-online")]
    if any(o in ("-p", "--package") or o.startswith("--package=") for o in options):
        return keep, target, rest
    return [*keep, "--package", target], None, rest


def download_line(argv: Sequence[str], workspace: str = ".") -> str:
    """What the card shows for the one download outside the sandbox."""
    return shlex.join(_command(argv, workspace, offline=False))


def _command(argv: Sequence[str], workspace: str, *, offline: bool) -> list[str]:
    """The launcher's line outside the sandbox: no project, user or system settings, nothing built."""
    if launcher_of(argv) == "uvx":
        words, _name, _rest = _uvx_parts(argv)
        flags = ["--no-config", "--offline", "--no-build"] if offline else ["--no-config", "--no-build"]
        words = [w for w in words if w not in _UVX_OURS]  # uv refuses a flag given twice
        return [argv[0], *flags, *_anchored(words, _UVX_PACKAGE, workspace), outside.PRINTENV, "PATH"]
    words, _name, _rest = _npx_parts(argv)
    flags = ["--offline"] if offline else []
    # Ours after the declaration's: npm takes the last, so none of them can be undone there.
    return [argv[0], *_anchored(words, _NPX_PACKAGE, workspace), *_NO_NPM_SETTINGS, "--ignore-scripts", "--yes",
            *flags, "--", outside.PRINTENV, "PATH"]


def _anchored(words: Sequence[str], options: frozenset[str], workspace: str) -> list[str]:
    """`words` with a relative path given to one of `options` made a path in the workspace, since
    the launcher runs elsewhere (`./srv`, `../pkg.tgz`; `name==1.0` stays a name)."""
    out = list(words)
    for i, word in enumerate(out):
        option, eq, value = word.partition("=")
        if eq and option in options:
            out[i] = f"{option}={_in_workspace(value, workspace)}"
        elif i > 0 and out[i - 1] in options:
            out[i] = _in_workspace(word, workspace)
    return out


def _in_workspace(value: str, workspace: str) -> str:
    if value.startswith(("./", "../")) or value in (".", ".."):
        return os.path.normpath(os.path.join(os.path.abspath(workspace), value))
    return value


async def resolve(argv: Sequence[str], cwd: str, own: Sequence[Path] = ()) -> ServerProgram:
    """The program to run in the sandbox for a uvx/npx line, from the launcher's cache (offline);
    raises NeedsDownload when the package isn't there yet, LauncherError otherwise. `cwd`: the
    workspace (relative paths in the line are in it; the launcher itself runs in NEUTRAL)."""
    try:
        code, out, err = await outside.ask_where(_command(argv, cwd, offline=True), NEUTRAL, _PROBE_TIMEOUT_S)
    except outside.OutsideRefused as exc:
        raise LauncherError("launcher", exc.sentence) from exc
    what = shlex.join(argv)
    if code != 0:
        if any(sign in err for sign in _NOT_CACHED):
            raise NeedsDownload("not_downloaded", f"'{what}' needs its package downloaded first.")
        raise LauncherError("launcher", f"{os.path.basename(argv[0])} could not find the package for "
                            f"'{what}' ({_why(err)}).")
    first = out.strip().split(":", 1)[0]
    if launcher_of(argv) == "uvx":
        _words, name, rest = _uvx_parts(argv)
        environment = os.path.dirname(first)
        program = os.path.join(first, name)
        seen = [environment, *_uv_interpreter(environment)]
    else:
        _words, name, rest = _npx_parts(argv)
        environment = os.path.dirname(os.path.dirname(first))  # <cache>/_npx/<id>/node_modules/.bin
        name = name or _npm_bin(environment, argv)
        program = os.path.join(first, name)
        seen = [environment]
    if not os.path.isfile(program):
        raise LauncherError("no_program", f"'{what}': the package has no program called {name}.")
    # The program's own interpreter (its shebang's: node, or the environment's Python) too.
    interpreter = plain_program((program,), cwd, own).visible
    return ServerProgram((program, *rest), tuple(shown([*seen, *interpreter], own)),
                         (("PATH", f"{first}:{os.environ.get('PATH', os.defpath)}"),))


async def download(verdict: object, argv: Sequence[str], cwd: str) -> None:
    """Download the package once, outside the sandbox, online, running none of its code
    (`verdict`: the user's yes, from Gate.review_download; `cwd`: the workspace, as for resolve)."""
    try:
        code, _out, err = await outside.download(verdict, _command(argv, cwd, offline=False), NEUTRAL,
                                                 DOWNLOAD_TIMEOUT_S)
    except outside.OutsideRefused as exc:
        raise LauncherError("download", exc.sentence) from exc
    if code != 0:
        raise LauncherError("download", f"Downloading the package for '{shlex.join(argv)}' failed ({_why(err)}).")


def _why(err: str) -> str:
    why = _last_line(err)
    if "--no-build" in err or "no-build" in why or "building" in why.lower() or "build source" in why:
        return "it has to be built from source, which would run its code outside the sandbox"
    return why


def _uv_interpreter(environment: str) -> list[str]:
    """The installation the environment's Python comes from (its bin/python leads there)."""
    found = installation_of(os.path.realpath(os.path.join(environment, "bin", "python")))
    return [found] if found is not None else []


def _npm_bin(environment: str, argv: Sequence[str]) -> str:
    """The program npx runs for a package: its only `bin`, or the one named like the package."""
    _words, target, _rest = _split(argv, _NPX_VALUES)
    package = ("@" + target[1:].split("@", 1)[0]) if target.startswith("@") else target.split("@", 1)[0]
    try:
        bins = json.loads(Path(environment, "node_modules", package, "package.json").read_text()).get("bin")
    except (OSError, ValueError):
        bins = None
    plain = package.rsplit("/", 1)[-1]
    if isinstance(bins, dict) and len(bins) == 1:
        return next(iter(bins))
    return plain


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no reason given"
