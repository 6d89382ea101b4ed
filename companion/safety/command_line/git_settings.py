"""What git may read and run when it runs unasked: no program from any repository in the workspace.

git takes settings from the system, the user (global) and the repository it finds, and a
setting can name a program (`diff.<x>.textconv`, `filter.<x>.clean`, `core.fsmonitor`,
`gpg.ssh.program`, an alias, a pager, a hook folder…). A file tool can write a repository's
settings (a bare repository laid at the workspace root is `HEAD`, `config`, `refs/`,
`objects/`: all plain files), so before git runs unasked (a family or line grant):

- every repository in the workspace is found (any folder holding `HEAD` and `config`: the
  workspace itself, `.git`, nested and submodule repositories under `.git/modules`, in a
  bounded walk) and each one's `config` may hold only keys on an allowlist of settings that
  name no program; anything else asks, naming the file and the key. Past the walk's bound it
  asks too ("too many folders to check");
- each checked `config` is carried to the sandbox as it was read: git is shown that very
  content, read-only, so a writer can't swap it between the check and the run;
- git runs with the system and global settings off, a bare repository found by looking around
  refused (`safe.bareRepository=explicit`), submodules not entered, and every program-naming
  setting it could still take from elsewhere set to nothing (`neutraliser`, which has the
  precedence of `git -c`).

Attributes (`.gitattributes`, `info/attributes`) only pick a driver; with no driver defined
(the allowlist holds none) they run nothing, and the system and global attribute files are off.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from companion.safety.jail.repositories import find

__all__ = ["SAFE_KEYS", "Inspection", "inspect", "neutraliser"]

SAFE_KEYS = frozenset({
    ("core", "repositoryformatversion"), ("core", "filemode"), ("core", "bare"),
    ("core", "logallrefupdates"), ("core", "ignorecase"), ("core", "precomposeunicode"),
    ("core", "symlinks"), ("core", "autocrlf"), ("core", "eol"), ("core", "safecrlf"),
    ("remote", "url"), ("remote", "fetch"), ("remote", "pushurl"), ("branch", "remote"),
    ("branch", "merge"), ("branch", "rebase"), ("user", "name"), ("user", "email"),
    ("init", "defaultbranch"), ("pull", "rebase"), ("pull", "ff"), ("extensions", "objectformat"),
    ("gc", "auto"), ("color", "ui"), ("submodule", "url"), ("submodule", "active"),
})
"""(section, key) a repository's config may hold for git to run unasked (`*` subsections too)."""
_NESTED_KEYS = frozenset({("core", "worktree")})
"""Also in a submodule's repository (under .git/modules), which names its work tree so."""

WALK_FOLDERS = 20_000
WALK_TIME_S = 0.5
"""How far the search for repositories goes before it gives up and asks."""

# Program-naming settings git could still take from the command line's peers: set to nothing.
_NEUTRAL = (
    ("core.fsmonitor", "false"), ("core.hooksPath", "/dev/null"), ("core.pager", "cat"),
    ("core.editor", "false"), ("core.sshCommand", "false"), ("core.askPass", ""),
    ("core.gitProxy", ""), ("core.alternateRefsCommand", ""), ("core.attributesFile", "/dev/null"),
    ("sequence.editor", "false"), ("diff.external", ""), ("credential.helper", ""),
    ("gpg.program", "false"), ("gpg.openpgp.program", "false"), ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"), ("gpg.ssh.defaultKeyCommand", ""), ("log.showSignature", "false"),
    ("interactive.diffFilter", ""), ("protocol.allow", "never"), ("uploadpack.packObjectsHook", ""),
    ("safe.bareRepository", "explicit"), ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"), ("status.submoduleSummary", "false"),
)
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$|[;#])")


@dataclass(frozen=True)
class Inspection:
    """What was found: why git may not run unasked (a sentence, or None), and the pins."""

    refusal: str | None
    pins: dict[str, str] = field(default_factory=dict)
    """{each repository's config, relative to the workspace: its sha256 as checked}."""
    contents: dict[str, tuple[bytes, int]] = field(default_factory=dict, repr=False)
    """{the same: (its bytes as checked, its mode)}: what the sandbox shows git."""


def inspect(workspace: Path) -> Inspection:
    """Look at every repository git could read in `workspace` (blocking; bounded)."""
    workspace = Path(workspace)
    dot_git = workspace / ".git"
    if dot_git.is_symlink() or (os.path.lexists(dot_git) and not dot_git.is_dir()):
        return Inspection("The repository's .git is a link or a file pointing elsewhere, so I need your OK.")
    if (dot_git / "commondir").exists():
        return Inspection("The repository's .git takes its settings from another folder (commondir), "
                          "so I need your OK.")
    walked = find(workspace, WALK_FOLDERS, WALK_TIME_S)
    if not walked.complete:
        return Inspection("The workspace has too many folders for me to check every git repository in "
                          "it, so I need your OK.")
    if walked.unfinished:
        # git init (or a writer) midway: what it will hold can't be checked yet.
        shown = walked.unfinished[0].relative_to(workspace).as_posix()
        return Inspection(f"The repository folder {shown} is not finished (no settings file or HEAD yet), "
                          "so I need your OK.")
    found = walked.repositories
    pins: dict[str, str] = {}
    contents: dict[str, tuple[bytes, int]] = {}
    for folder in found:
        config = folder / "config"
        relative = config.relative_to(workspace).as_posix()
        shown = _shown(relative)
        if config.is_symlink() or (folder / "HEAD").is_symlink():
            return Inspection(f"The repository settings file {shown} is a link, so I need your OK.")
        try:
            data = config.read_bytes()
            mode = config.stat().st_mode
        except OSError:
            return Inspection(f"I couldn't read the repository settings in {shown}, so I need your OK.")
        nested = "modules" in Path(relative).parts[:-1]
        refusal = _config_refusal(data.decode("utf-8", errors="replace"), shown,
                                  SAFE_KEYS | _NESTED_KEYS if nested else SAFE_KEYS)
        if refusal:
            return Inspection(refusal)
        pins[relative] = hashlib.sha256(data).hexdigest()
        contents[relative] = (data, mode)
    return Inspection(None, pins, contents)


def neutraliser() -> tuple[str, ...]:
    """`env NAME=VALUE…` words that turn git's other settings off and its program-naming ones
    to nothing for a run (GIT_CONFIG_COUNT has the precedence of `git -c`)."""
    words = ["env", f"GIT_CONFIG_COUNT={len(_NEUTRAL)}", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_SYSTEM=/dev/null",
             "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
             "GIT_PAGER=cat", "PAGER=cat", "GIT_EDITOR=false", "GIT_EXTERNAL_DIFF="]
    for i, (key, value) in enumerate(_NEUTRAL):
        words += [f"GIT_CONFIG_KEY_{i}={key}", f"GIT_CONFIG_VALUE_{i}={value}"]
    return tuple(words)


def _shown(relative: str) -> str:
    if relative == "config":
        return "config (the workspace itself is laid out as a git repository)"
    return relative


def _config_refusal(text: str, shown: str, allowed: frozenset[tuple[str, str]]) -> str | None:
    section = shown_section = ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            return f"The repository settings in {shown} continue lines in a way I don't read, so I need your OK."
        stripped = raw.strip()
        if not stripped or stripped[0] in "#;":
            continue
        header = _SECTION.match(stripped)
        if header:
            section = header.group(1).lower()
            subsection = header.group(2)
            shown_section = f"{section}.{subsection}" if subsection is not None else section
            stripped = header.group(3).strip()
            if not stripped or stripped[0] in "#;":
                continue
        elif stripped.startswith("["):
            return f"The repository settings in {shown} have a section I don't read, so I need your OK."
        key = _KEY.match(stripped)
        name = key.group(1).lower() if key else stripped
        if (section.split(".")[0], name) not in allowed:
            return (f"The repository settings ({shown}) have {shown_section}.{name}, which can make git run a "
                    "program, so I need your OK.")
    return None

