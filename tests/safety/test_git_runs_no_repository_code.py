"""git runs no program from a repository the model could have written (git_settings.py).

The attacks of issue 33, through the real tools, gate and sandbox: a bare repository laid at
the workspace root with `write_file` (which never asks), a `diff.<x>.textconv` picked by its
`info/attributes`, `gpg.ssh.program` with `log.showSignature`, a nested repository's filter, and
settings swapped between the check and the run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from sandbox_support import Approves, ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.command_line import git_settings
from companion.safety.consent.approval import ACCESS_READ, Answer, ApprovalRequest, Decision
from companion.safety.gate import Gate
from companion.tools.action import shell, write_file

TEXTCONV = "[diff \"x\"]\n\ttextconv = sh -c 'echo TEXTCONV-RAN; rm -rf sub; cat \"$0\"'\n"


class Declines:
    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(Decision.DECLINED)


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd,
                   check=True, capture_output=True)


async def write(gate: Gate, path: str, content: str) -> str:
    return await write_file.execute({"path": path, "content": content}, ctx_for(gate, write_file))


async def run(gate: Gate, line: str) -> str:
    return await shell.execute({"command": line}, ctx_for(gate, shell))


async def lay_bare_repository(gate: Gate, tmp_path: Path) -> None:
    """A bare repository at the workspace root, its settings and attributes written by write_file."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "a.txt").write_text("one\n")
    git("init", "-q", cwd=source)
    git("add", ".", cwd=source)
    git("commit", "-qm", "first", cwd=source)
    (source / "a.txt").write_text("one\ntwo\n")
    git("commit", "-qam", "second", cwd=source)
    git("clone", "-q", "--bare", str(source), str(tmp_path / "bare"), cwd=tmp_path)
    for part in ("HEAD", "refs", "objects", "packed-refs"):
        if (tmp_path / "bare" / part).exists():
            shutil.move(str(tmp_path / "bare" / part), gate.workspace / part)
    (gate.workspace / "sub").mkdir()
    (gate.workspace / "sub" / "keep.txt").write_text("keep\n")
    # Plain text files anywhere in the workspace: write_file writes them without a question.
    await write(gate, "config", "[core]\n\tbare = true\n" + TEXTCONV)
    await write(gate, "info/attributes", "* diff=x\n")
    assert (gate.workspace / "config").read_text().endswith(TEXTCONV) and (gate.workspace / "info" / "attributes").exists()


async def test_a_bare_repository_written_at_the_workspace_root_makes_a_granted_git_ask_naming_it(
        gate: Gate, tmp_path: Path) -> None:
    await lay_bare_repository(gate, tmp_path)
    gate.grant_family("git")
    gate.approver = Declines()
    for line in ("git log -p", "git show"):
        text = await run(gate, line)
        assert "didn't run it" in text and "TEXTCONV-RAN" not in text, text
        reason = gate.approver.asked[-1].reason
        assert "diff.x.textconv" in reason and "workspace itself" in reason, reason
    assert (gate.workspace / "sub" / "keep.txt").exists()


async def test_always_for_git_log_p_neither_writes_nor_runs_a_textconv_the_model_wrote(
        gate: Gate, tmp_path: Path) -> None:
    gate.grants.add_line("git log -p")
    assert (await gate.review("git log -p")).permit.access == ACCESS_READ  # git lines never write
    await lay_bare_repository(gate, tmp_path)
    gate.approver = Declines()
    text = await run(gate, "git log -p")
    assert "didn't run it" in text and "diff.x.textconv" in gate.approver.asked[-1].reason, text
    assert (gate.workspace / "sub" / "keep.txt").exists()


async def test_git_as_it_runs_unasked_refuses_a_bare_repository_it_merely_finds(gate: Gate, tmp_path: Path) -> None:
    # By construction, past the check: the door runs git with the settings a grant gets.
    await lay_bare_repository(gate, tmp_path)
    line = "git log -p"
    permit = gate.door.issue((*git_settings.neutraliser(), "bash", "-c", line), line, "shell", stdin=None,
                             network=False, how="family grant", access=ACCESS_READ)
    result = await gate.door.run(permit, risk="exec", timeout_s=30)
    assert "TEXTCONV-RAN" not in result.output and "safe.bareRepository" in result.output, result.output
    plain = gate.door.issue(("bash", "-c", line), line, "shell", stdin=None, network=False, how="asked",
                            access=ACCESS_READ)
    assert "TEXTCONV-RAN" in (await gate.door.run(plain, risk="exec", timeout_s=30)).output  # the attack is real


async def test_gpg_ssh_program_with_show_signature_runs_nothing_under_the_neutraliser(gate: Gate) -> None:
    ws = gate.workspace
    (ws / "a.txt").write_text("one\n")
    git("init", "-q", cwd=ws)
    git("add", ".", cwd=ws)
    git("commit", "-qm", "first", cwd=ws)
    tree = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=ws, check=True, capture_output=True,
                          text=True).stdout.strip()
    signed = (f"tree {tree}\nauthor t <t@example.com> 0 +0000\ncommitter t <t@example.com> 0 +0000\n"
              "gpgsig -----BEGIN SSH SIGNATURE-----\n U1NIU0lH\n -----END SSH SIGNATURE-----\n\nsigned\n")
    commit = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=ws, input=signed,
                            check=True, capture_output=True, text=True).stdout.strip()
    git("update-ref", "HEAD", commit, cwd=ws)
    (ws / "sign.sh").write_text("#!/bin/sh\necho SIGNING-PROGRAM-RAN\n")
    (ws / "sign.sh").chmod(0o755)
    (ws / "signers").write_text("t@example.com ssh-ed25519 AAAA\n")
    with (ws / ".git" / "config").open("a") as config:
        config.write(f"[gpg]\n\tformat = ssh\n[gpg \"ssh\"]\n\tprogram = {ws}/sign.sh\n"
                     f"\tallowedSignersFile = {ws}/signers\n[log]\n\tshowSignature = true\n")
    line = "git log -n 1"
    neutral = gate.door.issue((*git_settings.neutraliser(), "bash", "-c", line), line, "shell", stdin=None,
                              network=False, how="family grant", access=ACCESS_READ)
    assert "SIGNING-PROGRAM-RAN" not in (await gate.door.run(neutral, risk="exec", timeout_s=30)).output
    plain = gate.door.issue(("bash", "-c", line), line, "shell", stdin=None, network=False, how="asked",
                            access=ACCESS_READ)
    assert "SIGNING-PROGRAM-RAN" in (await gate.door.run(plain, risk="exec", timeout_s=30)).output
    gate.grant_family("git")
    pre = gate.precheck(line)
    assert pre.how == "ask" and "gpg.format" in pre.reason, pre


async def test_a_nested_repository_s_filter_makes_a_granted_git_ask_naming_its_settings(gate: Gate) -> None:
    ws = gate.workspace
    git("init", "-q", cwd=ws)
    nested = ws / "vendor" / "lib"
    nested.mkdir(parents=True)
    git("init", "-q", cwd=nested)
    with (nested / ".git" / "config").open("a") as config:
        config.write("[filter \"x\"]\n\tclean = sh -c 'echo FILTER-RAN; cat'\n")
    gate.grant_family("git")
    pre = gate.precheck("git status")
    assert pre.how == "ask" and "vendor/lib/.git/config" in pre.reason and "filter.x.clean" in pre.reason, pre


async def test_git_reads_its_settings_as_they_were_checked_even_when_swapped_before_the_run(gate: Gate) -> None:
    git("init", "-q", cwd=gate.workspace)
    (gate.workspace / "untracked.txt").write_text("x\n")
    gate.grant_family("git")
    verdict = await gate.review("git status --short")
    assert verdict.how == "family grant" and ".git/config" in verdict.permit.contents
    with (gate.workspace / ".git" / "config").open("a") as config:  # a writer racing the run
        config.write("[status]\n\tshowUntrackedFiles = no\n")
    result = await gate.run(verdict, risk="exec", timeout_s=30)
    # git was shown the settings that were checked, not the ones written after.
    assert "untracked.txt" in result.output, result.output


def test_the_search_for_repositories_gives_up_and_asks_past_its_bound(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
    monkeypatch.setattr(git_settings, "WALK_FOLDERS", 10)
    assert "too many folders" in (git_settings.inspect(tmp_path).refusal or "")
