"""Each bypass that got through the old parser-only safety layer, tried again on the real tools.

Two things are checked for each: the rules no longer let it through without asking (the
convenience layer), and even when it is approved anyway, the kernel sandbox stops the harm
(the wall). The /proc environment read, setsid and the symlink swap race have their own
tests in test_sandbox_escapes.py and test_file_races.py.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from companion.safety.consent.approval import Answer, ApprovalRequest, AuditLog, Decision
from companion.safety.gate import CODE_FAMILY, Gate
from companion.safety.grants import GrantError, GrantStore
from companion.safety.jail.jail import GIT_SENTENCE
from companion.safety.sandbox import probe
from companion.tools.action import execute_code, shell, write_file
from companion.tools.context import ToolContext


class Answers:
    """Answers every question the same way, and remembers what it was shown."""

    def __init__(self, decision: Decision = Decision.APPROVED, always: bool = False) -> None:
        self.answer = Answer(decision, always)
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.answer


@pytest.fixture(autouse=True)
def real_sandbox() -> None:
    assert probe.unavailable_reason() is None, probe.unavailable_reason()


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "notes.txt").write_text("hello\n")
    return Gate(workspace, GrantStore(tmp_path / "approvals.toml"), approver=Answers(),
                audit=AuditLog(tmp_path / "approvals.log"))


@pytest.fixture
def home_secret():
    """A secret in the real home folder, where the old layer let commands read."""
    secret = "SECRET-" + secrets.token_hex(8)
    path = Path.home() / f".companion-bypass-{secrets.token_hex(4)}.txt"
    path.write_text(f"{secret}\nsecond line\n")
    yield path, secret
    path.unlink(missing_ok=True)


def ctx_for(gate: Gate, module, budget_s: float = 30) -> ToolContext:
    return ToolContext(workspace=gate.workspace, data_dir=gate.workspace.parent / "data", budget_s=budget_s,
                       services={"gate": gate}, tool=module.SCHEMA["name"], risk=module.RISK)


async def shell_run(gate: Gate, command: str, **args) -> str:
    return await shell.execute({"command": command, **args}, ctx_for(gate, shell))


async def code_run(gate: Gate, code: str) -> str:
    return await execute_code.execute({"code": code}, ctx_for(gate, execute_code))


# --- auto-safe lines that ran without asking ----------------------------------------------


async def test_date_with_an_abbreviated_file_option_asks_and_cannot_read_the_home(gate: Gate, home_secret) -> None:
    path, secret = home_secret
    line = f"date --fi={path}"
    assert not gate.precheck(line).approve
    text = await shell_run(gate, line)
    assert gate.approver.asked[-1].command == line
    assert secret not in text and "No such file" in text


async def test_find_with_fprint_after_a_double_dash_asks_and_cannot_write_outside(gate: Gate) -> None:
    target = Path.home() / f".companion-bypass-{secrets.token_hex(4)}"
    line = f"find -- . -fprint {target}"
    assert not gate.precheck(line).approve
    try:
        await shell_run(gate, line)
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


async def test_grep_deref_through_a_link_asks_and_finds_nothing_outside(gate: Gate, home_secret) -> None:
    path, secret = home_secret
    (gate.workspace / "sub" / "link").symlink_to(path)
    line = "grep --deref SECRET ."
    assert not gate.precheck(line).approve
    text = await shell_run(gate, line)
    assert secret not in text


async def test_tail_with_an_abbreviated_follow_asks_and_is_stopped_at_its_timeout(gate: Gate) -> None:
    line = "tail --f notes.txt"
    assert not gate.precheck(line).approve
    text = await shell.execute({"command": line, "timeout": 1}, ctx_for(gate, shell))
    assert "exit 124" in text
    assert gate.audit.runs()[-1]["ran"]["timed_out"] is True


# --- scan-clean Python that ran under "always" for code ------------------------------------


BYPASS_CODE = {
    "getattr": "import os\ngetattr(os, 'system')('echo pwned > {target}')",
    "__dict__": "import os\nos.__dict__['system']('echo pwned > {target}')",
    "posix.remove": "import posix\nposix.remove('{victim}')",
    "io.FileIO": "import io\nio.FileIO('{target}', 'w').write(b'pwned')",
    "pickle.loads": ("import pickle\n"
                     "pickle.loads(b\"cos\\nsystem\\n(S'echo pwned > {target}'\\ntR.\")"),
}


@pytest.mark.parametrize("kind", sorted(BYPASS_CODE))
async def test_code_that_hid_from_the_scan_now_asks_and_even_approved_cannot_touch_the_home(
        gate: Gate, kind: str) -> None:
    gate.grant_family(CODE_FAMILY)
    target = Path.home() / f".companion-bypass-{secrets.token_hex(4)}"
    victim = Path.home() / f".companion-victim-{secrets.token_hex(4)}"
    victim.write_text("keep me\n")
    code = BYPASS_CODE[kind].format(target=target, victim=victim)
    try:
        text = await code_run(gate, code)
        asked = gate.approver.asked
        # The scan now names it on the card: the grant for harmless code does not cover it.
        assert asked and asked[-1].saveable is False and "It runs in the sandbox" in asked[-1].reason
        assert not target.exists(), text
        assert victim.read_text() == "keep me\n"
    finally:
        target.unlink(missing_ok=True)
        victim.unlink(missing_ok=True)


async def test_code_reading_proc_environ_is_named_on_the_card(gate: Gate) -> None:
    await code_run(gate, "import os\nprint(open(f'/proc/{os.getppid()}/environ').read())")
    assert "reads secret files" in gate.approver.asked[-1].reason


# --- grants that covered more than the user meant ------------------------------------------


async def test_a_git_family_grant_does_not_cover_an_alias_set_on_the_command_line(gate: Gate) -> None:
    gate.grant_family("git")
    (gate.workspace / "sub" / "keep.txt").write_text("x")
    gate.approver = Answers(Decision.DECLINED)
    line = "git -c alias.x='!rm -rf sub' x"
    text = await shell_run(gate, line)
    assert gate.approver.asked[-1].command == line
    assert "didn't run it" in text
    assert (gate.workspace / "sub" / "keep.txt").exists()
    assert gate.precheck("git status").how == "family grant"


async def test_always_is_not_offered_for_a_script_and_a_yes_runs_it_only_once(gate: Gate) -> None:
    (gate.workspace / "run.sh").write_text("echo building\n")
    (gate.workspace / "sub" / "keep.txt").write_text("x")
    gate.approver = Answers(Decision.APPROVED, always=True)
    assert "building" in await shell_run(gate, "sh run.sh")
    asked = gate.approver.asked[-1]
    assert not asked.saveable and "sh runs code" in asked.once_only
    assert gate.grants.current().lines == ()  # the "always" was taken as a yes, once
    await write_file.execute({"path": "run.sh", "content": "rm -rf sub\n"}, ctx_for(gate, write_file))
    gate.approver = Answers(Decision.DECLINED)
    text = await shell_run(gate, "sh run.sh")
    assert gate.approver.asked and "didn't run it" in text
    assert (gate.workspace / "sub" / "keep.txt").exists()


async def test_a_script_changed_while_its_card_is_open_asks_again(gate: Gate) -> None:
    (gate.workspace / "run.sh").write_text("echo building\n")
    (gate.workspace / "sub" / "keep.txt").write_text("x")

    class ChangesItWhileAsked(Answers):
        async def ask(self, request: ApprovalRequest) -> Answer:
            if not self.asked:  # the model's other call rewrites the script while the card is open
                (gate.workspace / "run.sh").write_text("rm -rf sub\n")
            return await super().ask(request)

    gate.approver = ChangesItWhileAsked(Decision.APPROVED)
    text = await shell_run(gate, "sh run.sh")
    first, second = gate.approver.asked
    assert "run.sh changed while I was asking" in second.reason
    # The yes to the second card is for what run.sh is now; the permit carries that content's hash.
    assert "[exit 0]" in text and not (gate.workspace / "sub").exists()
    assert first.command == second.command == "sh run.sh"


async def test_a_script_that_keeps_changing_under_its_card_does_not_run(gate: Gate) -> None:
    script = gate.workspace / "run.sh"
    script.write_text("echo 0\n")

    class ChangesItEveryTime(Answers):
        async def ask(self, request: ApprovalRequest) -> Answer:
            script.write_text(f"echo {len(self.asked) + 1}\n")
            return await super().ask(request)

    gate.approver = ChangesItEveryTime(Decision.APPROVED)
    text = await shell_run(gate, "sh run.sh")
    assert "didn't run it" in text and len(gate.approver.asked) == 4
    assert gate.audit.runs() == []


async def test_a_family_grant_never_covers_a_line_that_runs_a_workspace_file(gate: Gate) -> None:
    gate.grant_family("git")
    (gate.workspace / "check.sh").write_text("rm -rf sub\n")
    assert gate.precheck("git status").how == "family grant"
    assert gate.precheck("git ./check.sh").how == "ask"
    with pytest.raises(GrantError):
        gate.grant_family("npm")  # npm runs package.json's scripts: nothing about it is remembered
    gate.grants.path.write_text('families = ["npm", "cargo", "git"]\n')
    assert gate.grants.current().families == ("git",) and "dropped 2" in gate.grants.notice


HOSTILE_GIT_CONFIG = {
    "fsmonitor": "[core]\n\tfsmonitor = rm -rf sub\n",
    "pager": "[core]\n\tpager = rm -rf sub; cat\n",
    "alias": "[alias]\n\tstatus = !rm -rf sub\n",
    "diff.external": "[diff]\n\texternal = /bin/sh -c 'rm -rf sub'\n",
    "filter": "[filter \"x\"]\n\tclean = rm -rf sub\n",
    "sshCommand": "[core]\n\tsshCommand = rm -rf sub\n",
    "include": "[include]\n\tpath = ../evil.cfg\n",
    "hooks": "[core]\n\thooksPath = .\n",
    "worktree config": "[extensions]\n\tworktreeConfig = true\n",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_GIT_CONFIG))
async def test_a_git_family_grant_asks_when_the_repository_settings_could_run_code(gate: Gate, kind: str) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(gate.workspace)], check=True)
    (gate.workspace / ".gitattributes").write_text("* filter=x diff=x\n")
    (gate.workspace / "sub" / "keep.txt").write_text("x")
    gate.grant_family("git")
    assert gate.precheck("git status").how == "family grant"
    config = gate.workspace / ".git" / "config"
    # The model tries to write the repository's settings with a file tool: refused (jail.check_writable).
    said = await write_file.execute({"path": ".git/config", "content": config.read_text() + HOSTILE_GIT_CONFIG[kind]},
                                    ctx_for(gate, write_file))
    assert said == GIT_SENTENCE
    # Written some other way (an approved writing command, a clone): git under the grant asks.
    config.write_text(config.read_text() + HOSTILE_GIT_CONFIG[kind])
    gate.approver = Answers(Decision.DECLINED)
    for line in ("git status", "git diff", "git log --oneline -n 1"):
        text = await shell_run(gate, line)
        assert "didn't run it" in text, text
        assert ".git/config" in gate.approver.asked[-1].reason
    assert (gate.workspace / "sub" / "keep.txt").exists()


async def test_git_under_a_family_grant_runs_with_code_running_settings_put_out_of_action(gate: Gate) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(gate.workspace)], check=True)
    gate.grant_family("git")
    verdict = await gate.review("git status --short")
    assert verdict.how == "family grant"
    argv = verdict.permit.argv
    neutral = dict(w.split("=", 1) for w in argv[1:argv.index("bash")])
    keys = {neutral[f"GIT_CONFIG_KEY_{i}"]: neutral[f"GIT_CONFIG_VALUE_{i}"]
            for i in range(int(neutral["GIT_CONFIG_COUNT"]))}
    assert keys["core.fsmonitor"] == "false" and keys["core.hooksPath"] == "/dev/null" and keys["diff.external"] == ""
    assert keys["gpg.ssh.program"] == "false" and keys["safe.bareRepository"] == "explicit"
    assert neutral["GIT_CONFIG_GLOBAL"] == neutral["GIT_CONFIG_SYSTEM"] == "/dev/null"
    assert "[exit 0]" in await shell_run(gate, "git status --short")  # git still works


async def test_a_hand_saved_tar_wildcard_grant_is_dropped_so_an_injected_option_asks(gate: Gate) -> None:
    # Files named like options: `tar cf b.tar *` would read them as --checkpoint-action=exec=….
    (gate.workspace / "--checkpoint=1").write_text("")
    (gate.workspace / "--checkpoint-action=exec=sh x.sh").write_text("")
    (gate.workspace / "x.sh").write_text("rm -rf sub\n")
    (gate.workspace / "sub" / "keep.txt").write_text("x")
    gate.grants.path.write_text('lines = ["tar cf b.tar *"]\n')
    assert gate.grants.current().lines == () and "dropped 1" in gate.grants.notice
    gate.approver = Answers(Decision.DECLINED)
    text = await shell_run(gate, "tar cf b.tar *")
    assert "didn't run it" in text and not gate.approver.asked[-1].saveable
    assert "wildcard" in gate.approver.asked[-1].once_only
    assert (gate.workspace / "sub" / "keep.txt").exists()


async def test_a_family_grant_does_not_cover_a_line_with_hidden_characters(gate: Gate) -> None:
    gate.grant_family("jq")
    assert gate.precheck("jq . data.json").how == "family grant"
    pre = gate.precheck("jq . data.json\u200b")
    assert pre.how == "ask" and "hidden" in pre.reason
