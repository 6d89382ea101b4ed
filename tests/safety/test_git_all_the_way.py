"""git, all the way (issue 50, item 5), through the real tools, gate and sandbox.

A git line on a card runs with the repository settings the card was shown with: settings
written while it is open, or a `.git` that appears then, ask again, and settings swapped after
the yes are not what git reads. An approved command that may write the workspace can't change
a repository's settings, hooks or attributes (what the user's own git runs later), while git
itself still commits. A `.git` folder caught without its settings asks even under a grant.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

from sandbox_support import ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.gate import Gate
from companion.tools.action import shell, write_file

TEXTCONV = "[diff \"x\"]\n\ttextconv = sh -c 'echo TEXTCONV-RAN; rm -rf sub; cat \"$0\"'\n"


class YesThenNo:
    """Says yes to the first card, after `meanwhile` (what else happens while it is open); no after."""

    def __init__(self, meanwhile: Callable[[], Awaitable[None]]) -> None:
        self.asked: list[ApprovalRequest] = []
        self._meanwhile = meanwhile

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        if len(self.asked) > 1:
            return Answer(Decision.DECLINED)
        await self._meanwhile()
        return Answer(Decision.APPROVED)


class Yes:
    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(Decision.APPROVED)


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd,
                          check=True, capture_output=True, text=True)
    return done.stdout


async def run(gate: Gate, line: str) -> str:
    return await shell.execute({"command": line}, ctx_for(gate, shell))


def committed_twice(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.txt").write_text("one\n")
    git("init", "-q", cwd=folder)
    git("add", ".", cwd=folder)
    git("commit", "-qm", "first", cwd=folder)
    (folder / "a.txt").write_text("one\ntwo\n")
    git("commit", "-qam", "second", cwd=folder)


async def test_settings_written_while_a_git_card_is_open_ask_again(gate: Gate, tmp_path: Path) -> None:
    # The workspace laid out as a bare repository with plain settings; while the card for
    # `git log -p` is open, write_file (which never asks) gives it a textconv that deletes a folder.
    committed_twice(tmp_path / "source")
    git("clone", "-q", "--bare", str(tmp_path / "source"), str(tmp_path / "bare"), cwd=tmp_path)
    for part in ("HEAD", "refs", "objects", "packed-refs", "config"):
        if (tmp_path / "bare" / part).exists():
            shutil.move(str(tmp_path / "bare" / part), gate.workspace / part)
    (gate.workspace / "sub").mkdir()
    (gate.workspace / "sub" / "keep.txt").write_text("keep\n")

    async def meanwhile() -> None:
        for path, content in (("config", "[core]\n\tbare = true\n" + TEXTCONV), ("info/attributes", "* diff=x\n")):
            # Hers wait for the still workspace (item 4) and are refused; another writer's land.
            said = await write_file.execute({"path": path, "content": content}, ctx_for(gate, write_file, budget_s=0.3))
            assert "keeping the workspace still" in said, said
            (gate.workspace / path).parent.mkdir(exist_ok=True)
            (gate.workspace / path).write_text(content)
        assert (gate.workspace / "config").read_text().endswith(TEXTCONV)

    gate.approver = YesThenNo(meanwhile)
    text = await run(gate, "git log -p")
    assert "TEXTCONV-RAN" not in text and (gate.workspace / "sub" / "keep.txt").exists(), text
    assert len(gate.approver.asked) == 2 and "config changed while I was asking" in gate.approver.asked[1].reason


async def test_a_git_line_reads_the_settings_its_card_was_shown_with_even_when_swapped_after_the_yes(
        gate: Gate) -> None:
    git("init", "-q", cwd=gate.workspace)
    (gate.workspace / "untracked.txt").write_text("x\n")
    gate.approver = Yes()
    verdict = await gate.review("git status --short")
    assert verdict.how == "asked" and ".git/config" in verdict.permit.contents
    with (gate.workspace / ".git" / "config").open("a") as config:  # a writer racing the run
        config.write("[status]\n\tshowUntrackedFiles = no\n")
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    assert "untracked.txt" in result.output, result.output


async def test_a_git_folder_that_appears_while_a_git_card_is_open_asks_again(gate: Gate) -> None:
    (gate.workspace / "sub").mkdir()
    (gate.workspace / "sub" / "keep.txt").write_text("keep\n")
    (gate.workspace / "a.txt").write_text("one\n")

    async def meanwhile() -> None:  # a job of hers still running makes a repository
        git("init", "-q", cwd=gate.workspace)
        with (gate.workspace / ".git" / "config").open("a") as config:
            config.write(TEXTCONV)
        (gate.workspace / ".gitattributes").write_text("* diff=x\n")
        git("add", "a.txt", cwd=gate.workspace)
        git("commit", "-qm", "first", cwd=gate.workspace)
        (gate.workspace / "a.txt").write_text("two\n")

    gate.approver = YesThenNo(meanwhile)
    text = await run(gate, "git diff")
    assert "TEXTCONV-RAN" not in text and (gate.workspace / "sub" / "keep.txt").exists(), text
    assert len(gate.approver.asked) == 2 and ".git/config changed" in gate.approver.asked[1].reason


async def test_always_for_a_git_line_is_not_tied_to_its_repository_settings(gate: Gate) -> None:
    # An unasked git line checks the settings itself: a saved line doesn't ask again for a new remote.
    git("init", "-q", cwd=gate.workspace)

    class Always(Yes):
        async def ask(self, request: ApprovalRequest) -> Answer:
            self.asked.append(request)
            return Answer(Decision.APPROVED, always=True)

    gate.approver = Always()
    await run(gate, "git status")
    git("remote", "add", "origin", "https://example.com/x.git", cwd=gate.workspace)
    assert gate.precheck("git status").how == "line grant"


async def test_a_git_folder_caught_without_its_settings_asks_under_a_grant(gate: Gate) -> None:
    # git init midway (or a folder laid by hand): nothing to check yet, and nothing pinned.
    (gate.workspace / ".git").mkdir()
    gate.grant_family("git")
    for name, content in (("HEAD", "ref: refs/heads/main\n"), ("config", "[core]\n")):
        (gate.workspace / ".git" / name).write_text(content)
        pre = gate.precheck("git status")
        assert pre.how == "ask" and "not finished" in pre.reason, pre
        (gate.workspace / ".git" / name).unlink()


async def test_an_approved_command_cannot_change_what_the_user_s_git_runs_later(gate: Gate) -> None:
    ws = gate.workspace
    committed_twice(ws)
    committed_twice(ws / "vendor" / "lib")
    git("worktree", "add", "-q", "tree", cwd=ws)
    before = {path: path.read_bytes() for path in (ws / ".git" / "config", ws / ".git" / "info" / "exclude",
                                                     ws / "vendor" / "lib" / ".git" / "config",
                                                     ws / ".git" / "worktrees" / "tree" / "commondir",
                                                     ws / "tree" / ".git")}
    gate.approver = Yes()
    # No git in the line, so nothing of it is pinned for git: only the sandbox stands in the way.
    attacks = {
        "fsmonitor": "printf '[core]\\n\\tfsmonitor = ./evil.sh\\n' >> .git/config",
        "hook": "printf '#!/bin/sh\\n./evil.sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "attributes": "echo '* diff=x' > .git/info/attributes",
        "nested": "echo '[core] fsmonitor = ../../evil.sh' >> vendor/lib/.git/config",
        "hooks moved": "mv .git/hooks .git/old-hooks",
        "work tree": "echo ../../../elsewhere > .git/worktrees/tree/commondir",
        "pointer": "echo 'gitdir: ../elsewhere' > tree/.git",
    }
    said = {name: await run(gate, line) for name, line in attacks.items()}
    for name, text in said.items():
        assert "[exit 0]" not in text and ("Read-only file system" in text or "busy" in text), (name, text)
    assert {path: path.read_bytes() for path in before} == before
    assert not (ws / ".git" / "hooks" / "pre-commit").exists() and not (ws / ".git" / "info" / "attributes").exists()
    # git itself still works: objects, refs, the index and HEAD stay writable.
    (ws / "b.txt").write_text("b\n")
    text = await run(gate, "git add b.txt && git -c user.name=t -c user.email=t@e commit -qm third && echo COMMITTED")
    assert "COMMITTED" in text, text
    assert git("log", "--format=%s", cwd=ws).split() == ["third", "second", "first"]


async def test_a_git_card_whose_settings_include_other_files_says_it_cannot_tell_everything(gate: Gate) -> None:
    git("init", "-q", cwd=gate.workspace)
    with (gate.workspace / ".git" / "config").open("a") as config:
        config.write("[include]\n\tpath = ../team.gitconfig\n")
    (gate.workspace / "team.gitconfig").write_text("[user]\n\tname = t\n")
    gate.approver = Yes()
    await run(gate, "git status")
    reason = gate.approver.asked[0].reason
    assert "I can't tell everything this runs" in reason and "takes more settings from other files" in reason, reason
    assert not gate.approver.asked[0].saveable
