"""The gate's decision before anyone is asked: grants, then the rules, then "ask".

Decision order for a command line: a saved grant for this exact line → a saved grant for its
family (the first word) → auto-safe → ask. Lines that always ask skip the grants and can never
be saved. A git line under a grant runs unasked only when every repository in the workspace
holds settings that name no program, and its settings are pinned as they were checked
(git_settings.py). Blocking: it reads the workspace (globs, pinned files, git's settings);
the gate calls it off the event loop. Pure otherwise: no question is put and nothing runs here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from companion.safety.command_line import git_settings
from companion.safety.command_line.always import (
    BUILD_TOOLS,
    git_words_refusal,
    once_only_reason,
    program_of,
)
from companion.safety.command_line.pins import files_run_by, fingerprint
from companion.safety.command_line.rules import (
    CODE_FAMILY,
    TooManyFiles,
    has_metacharacter,
    review_line,
)
from companion.safety.consent.approval import ACCESS_READ, ACCESS_WRITE
from companion.safety.consent.visible import make_visible
from companion.safety.grants import GrantStore

__all__ = ["CODE_FAMILY", "Precheck", "changed_files", "decide_code", "decide_line", "decide_tool_call",
           "unasked_access"]

_WRITING_AUTO_SAFE = frozenset({"mkdir"})
"""Auto-safe commands that change the workspace (only by adding an empty folder)."""


@dataclass(frozen=True)
class Precheck:
    """What the gate would do before asking anyone."""

    approve: bool
    how: str
    """"line grant", "family grant", "auto-safe", or "ask"."""
    reason: str
    saveable: bool
    once_only: str = ""
    """Why "always" is not offered for a line that may still run once (shown on the card)."""
    pins: Mapping[str, str] = field(default_factory=dict)
    """Files the decision read as they were read ({relative: sha256}: git's repository settings)."""
    contents: Mapping[str, tuple[bytes, int]] = field(default_factory=dict, repr=False)
    """Their content as read ({relative: (bytes, mode)}): an unasked run is shown that very content."""


def decide_line(command: str, workspace: Path, grants: GrantStore) -> Precheck:
    """The decision for the bash line `command` in `workspace`, up to asking the user."""
    line = command.strip()
    try:
        review = review_line(line, workspace)
    except TooManyFiles as exc:
        return Precheck(False, "ask", exc.sentence, saveable=False,
                        once_only="I couldn't check it, so I can only allow it once.")
    if review.danger:
        return Precheck(False, "ask", review.danger, saveable=False)
    once_only = once_only_reason(line)
    git_words, repository = _git_check(line, workspace)
    git_refused, git_pins = git_words or repository.refusal, repository.pins
    taken = {"pins": git_pins, "contents": repository.contents}
    if grants.has_line(line) and once_only is None:
        changed = changed_files(grants.pins_for(line), fingerprint(line, workspace))
        if not changed and not git_refused:
            return Precheck(True, "line grant", "you said always for this exact line", True, **taken)
        why = git_refused or f"{changed} changed since you said always for this line, so I need your OK again."
        return Precheck(False, "ask", why, saveable=True)
    if grants.has_family(review.family):
        refusal = _family_refusal(line, review.family, git_refused, workspace)
        if refusal is None:
            return Precheck(True, "family grant", f"you said always for {review.family}", True, **taken)
        return Precheck(False, "ask", refusal, saveable=once_only is None, once_only=once_only or "")
    if review.auto_safe:
        return Precheck(True, "auto-safe", review.note, True)
    # A card for git names what its repository's settings would make it run.
    why = repository.refusal or f"I need your OK because {review.note}."
    return Precheck(False, "ask", why, saveable=once_only is None, once_only=once_only or "")


def decide_code(code: str, findings: list[str], grants: GrantStore) -> Precheck:
    """Like decide_line, for Python code: risky code always asks, even with the family granted."""
    if findings:
        # The scan explains; the sandbox is what holds the code to the workspace.
        return Precheck(False, "ask", f"That code {'; '.join(findings)}. It runs in the sandbox, "
                        "so it can only change the workspace.", saveable=False)
    if grants.has_line(code):
        return Precheck(True, "line grant", "you said always for this exact code", True)
    if grants.has_family(CODE_FAMILY):
        return Precheck(True, "family grant", "you said always for harmless code", True)
    return Precheck(False, "ask", "I need your OK to run code. \"Always\" lets code that touches no "
                    "files, programs, network or secrets run without asking.", saveable=True)


def decide_tool_call(grants: GrantStore, server: str, tool: str, *, destructive: bool,
                     claims_read_only: bool) -> Precheck:
    """For a call of an untrusted MCP server's tool: the server's hints only make it more
    cautious (a destructive tool asks every time; a read-only claim is shown as a claim)."""
    key = f"mcp:{server}/{tool}"
    if destructive:
        return Precheck(False, "ask", f"{tool} from the MCP server '{server}' may delete or "
                        "overwrite things, so I ask every time.", saveable=False)
    if grants.has_line(key):
        return Precheck(True, "line grant", f"you said always for {key}", True)
    if claims_read_only:
        return Precheck(False, "ask", f"I need your OK: the MCP server '{server}' says {tool} only "
                        "reads, but I can't check that. Mark the server trusted in Settings to "
                        "stop these questions.", saveable=True)
    return Precheck(False, "ask", f"I need your OK: {tool} from the MCP server '{server}' "
                    "changes things.", saveable=True)


def unasked_access(command: str, how: str) -> str:
    """What a line nobody was asked about may touch: read-only, except a saved line (approved,
    on a card that said it writes, when it was saved) and the auto-safe commands that write."""
    if how == "line grant":
        # git may only be saved for subcommands that change nothing (always.py): it never needs to.
        return ACCESS_READ if program_of(command) == "git" else ACCESS_WRITE
    if how == "auto-safe" and shlex.split(command)[:1] and shlex.split(command)[0] in _WRITING_AUTO_SAFE:
        return ACCESS_WRITE
    return ACCESS_READ


def changed_files(before: Mapping[str, str], now: Mapping[str, str]) -> str:
    """The files whose hashes differ (or that appeared or went), joined for a sentence."""
    return ", ".join(sorted(name for name in set(before) | set(now) if before.get(name) != now.get(name)))


def _git_check(line: str, workspace: Path) -> tuple[str | None, git_settings.Inspection]:
    """For a plain git line: why its words may not run unasked, and what its repositories'
    settings say (pinned as checked: git_settings.py)."""
    if program_of(line) != "git" or has_metacharacter(line):
        return None, git_settings.Inspection(None)
    return git_words_refusal(shlex.split(line)[1:]), git_settings.inspect(workspace)


def _family_refusal(line: str, family: str | None, git_refused: str | None, workspace: Path) -> str | None:
    """Why the granted `family` does not cover `line` (a sentence), or None when it does."""
    # A family grant trusts the program, never code from the workspace it would run.
    if files_run_by(line, workspace) or (family or "").lower() in BUILD_TOOLS:
        return f"{family} would run code from the workspace, so I need your OK."
    if any(ch in "*?[" for ch in line):
        return "It has a wildcard, which could expand to an option, so I need your OK."
    if make_visible(line).hidden:
        return "It contains hidden or control characters, so I need your OK."
    return git_refused
