"""Least privilege in the kernel: what the user approved decides the mounts, and nothing inside is privileged.

Through the real gate, the real tools and the real bubblewrap sandbox. These tests run as
root here and in CI, which is the case that matters most: the sandbox's user is root outside.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import os
import stat
from pathlib import Path

import pytest
from sandbox_support import Approves, ctx_for, gate_fixture, real_sandbox_fixture  # noqa: F401 (fixtures)

from companion.safety.consent.approval import (
    ACCESS_READ,
    ACCESS_WRITE,
    AuditLog,
)
from companion.safety.gate import CODE_FAMILY, Gate
from companion.safety.grants import GrantStore
from companion.safety.sandbox.cgroup import CallCgroup
from companion.safety.sandbox.door import ProcessDoor, ProcessRefused
from companion.safety.sandbox.limits import Limits
from companion.tools.action import execute_code, shell


async def run_shell(gate: Gate, command: str, **args: object) -> str:
    return await shell.execute({"command": command, **args}, ctx_for(gate, shell))


async def run_code(gate: Gate, code: str) -> str:
    return await execute_code.execute({"code": code}, ctx_for(gate, execute_code))


def tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `root` with its mode and content: what "nothing changed" compares."""
    found = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = (path.stat().st_mode, path.read_bytes())
    return found


# --- how it was allowed decides the mounts -----------------------------------------------


async def test_unasked_runs_are_read_only_and_asked_ones_may_write(gate: Gate) -> None:
    gate.grant_family("cp")
    gate.grant_family(CODE_FAMILY)
    gate.grants.add_line("wc -l notes.txt")
    cases = [
        (gate.review("ls"), "auto-safe", ACCESS_READ),
        (gate.review("cp a.txt b.txt"), "family grant", ACCESS_READ),
        (gate.review_code("print(1)", []), "family grant", ACCESS_READ),
        (gate.review("mkdir -p made"), "auto-safe", ACCESS_WRITE),  # mkdir writes, and is auto-safe
        (gate.review("wc -l notes.txt"), "line grant", ACCESS_WRITE),  # saved from a card that said so
        (gate.review("touch x"), "asked", ACCESS_WRITE),
    ]
    for review, how, access in cases:
        verdict = await review
        assert (verdict.how, verdict.permit.access) == (how, access)
    assert gate.declared(["server"], tool="mcp:x").permit.access == ACCESS_WRITE
    assert [request.access for request in gate.approver.asked] == [ACCESS_WRITE]  # the card says so


async def test_a_family_granted_command_cannot_change_the_workspace_but_the_same_line_approved_can(
        gate: Gate) -> None:
    (gate.workspace / "a.txt").write_text("a\n")
    gate.grant_family("cp")
    text = await run_shell(gate, "cp a.txt b.txt")
    assert gate.approver.asked == [] and "Read-only file system" in text, text
    assert not (gate.workspace / "b.txt").exists()
    gate.revoke("cp")
    await run_shell(gate, "cp a.txt b.txt")
    assert len(gate.approver.asked) == 1 and (gate.workspace / "b.txt").read_text() == "a\n"


HOSTILE_GIT_CONFIG = """\
[core]
    fsmonitor = "rm -rf sub; touch fsmonitor-ran; echo changed >> tracked.txt; false"
    pager = "touch pager-ran; cat"
    editor = "touch editor-ran"
    hooksPath = hooks
[alias]
    st = "!rm -rf sub; touch alias-ran; echo changed >> tracked.txt"
[diff]
    external = "sh -c 'touch diff-ran'"
[filter "evil"]
    clean = "sh -c 'touch filter-ran; cat'"
    smudge = "sh -c 'touch filter-ran; cat'"
    process = "sh -c 'touch filter-ran'"
"""


async def test_a_hostile_git_config_changes_nothing_under_a_read_only_git_status(gate: Gate) -> None:
    ws = gate.workspace
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(ws)]
    (ws / "tracked.txt").write_text("one\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "keep.txt").write_text("keep\n")  # what the issue's attack deleted
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "first"]):
        proc = await asyncio.create_subprocess_exec(*git, *argv)
        assert await proc.wait() == 0
    (ws / "tracked.txt").write_text("one\ntwo\n")  # a change, so diff and status have work to do
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\n")
    with (ws / ".git" / "config").open("a") as config:
        config.write(HOSTILE_GIT_CONFIG)
    before = tree(ws)
    # Straight through the door as the gate issues it for auto-safe and family-granted lines:
    # whatever git is told to run, the kernel holds the workspace read-only.
    door = ProcessDoor(lambda: ws, lambda: None)
    outputs = []
    for line in ("git status", "git diff", "git log -p", "git st", "git -p status"):
        permit = door.issue(("bash", "--noprofile", "--norc", "-c", line), line, "shell", stdin=None,
                            network=False, how="family grant", access=ACCESS_READ)
        outputs.append((await door.run(permit, risk="exec", timeout_s=30)).output)
    assert any("Read-only file system" in text for text in outputs), outputs  # it did try
    assert tree(ws) == before


# --- no privilege inside ---------------------------------------------------------------


PRY_AS_ROOT = r"""
import os, shutil, stat
print("uid map:", open("/proc/self/uid_map").read().split())
for knob in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/panic", "/proc/sys/kernel/poweroff_cmd",
             "/proc/sys/vm/drop_caches",
             "/proc/sysrq-trigger", "/sys/kernel/uevent_helper", "/sys/fs/cgroup/pids/cgroup.procs"):
    try:
        fd = os.open(knob, os.O_WRONLY)  # opened only: nothing is ever written
    except OSError as exc:
        print("refused", knob, exc.strerror)
    else:
        os.close(fd)
        print("OPENED FOR WRITING", knob)
shutil.copy("/bin/sh", "sh")
for mode in (0o4755, 0o2755, 0o6755):
    try:
        os.chmod("sh", mode)
    except OSError as exc:
        print("chmod refused", oct(mode), exc.strerror)
try:
    os.close(os.open("made-setuid", os.O_CREAT | os.O_WRONLY, 0o4755))
except OSError as exc:
    print("create refused", exc.strerror)
try:
    os.mknod("node-setuid", stat.S_IFREG | 0o6755)
except OSError as exc:
    print("mknod refused", exc.strerror)
print("caps:", [l for l in open("/proc/self/status") if l.startswith(("CapEff", "NoNewPrivs"))])
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
# keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0): root's own keyring outside, if allowed.
if libc.syscall(250, 0, -4, 0) == -1:
    print("keyring refused", os.strerror(ctypes.get_errno()))
"""


async def test_approved_code_cannot_open_kernel_knobs_for_writing_or_leave_a_setuid_file(gate: Gate) -> None:
    text = await run_code(gate, PRY_AS_ROOT)
    assert len(gate.approver.asked) == 1  # approved once: the most a "yes" gives
    assert "uid map:" in text and "OPENED FOR WRITING" not in text, text
    inside, outside, _count = ast.literal_eval(text.split("uid map:", 1)[1].splitlines()[0].strip())
    if os.geteuid() == 0:
        assert inside != "0" and (outside != "0" or inside == "65534")  # root outside is nobody inside
    else:
        # A user's command is that user (bwrap's nested namespace maps it through its own root,
        # which is the user outside): never root, and the audit log says so.
        assert inside == str(os.geteuid()) and gate.audit.runs()[-1]["ran"]["host_uid"] == os.geteuid()
    assert "CapEff:\\t0000000000000000" in text and "NoNewPrivs:\\t1" in text, text
    assert "chmod refused 0o4755 Operation not permitted" in text
    if os.uname().machine == "x86_64":  # the keyctl number used above
        assert "keyring refused Function not implemented" in text, text
    for path in gate.workspace.iterdir():
        assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), path


async def test_an_approved_shell_line_cannot_open_core_pattern_or_leave_a_setuid_shell(gate: Gate) -> None:
    # ">>" opens for appending and nothing is ever written: the open alone is the test.
    text = await run_shell(gate, "exec 3>>/proc/sys/kernel/core_pattern && echo OPENED; "
                                 "rm -f sh; cp /bin/sh sh && chmod 4755 sh; chmod g+s sh; ls -l sh")
    assert len(gate.approver.asked) == 1 and gate.approver.asked[0].access == ACCESS_WRITE
    # Root's file to a user that owns nothing (as root: identity.py); read-only besides.
    assert "OPENED" not in text and ("Read-only file system" in text or "Permission denied" in text), text
    assert text.count("Operation not permitted") == 2, text
    assert not (gate.workspace / "sh").stat().st_mode & (stat.S_ISUID | stat.S_ISGID)


async def test_a_command_is_an_unprivileged_user_inside_even_when_she_is_root(gate: Gate) -> None:
    text = await run_shell(gate, "id -u; cat /proc/self/uid_map; grep CapEff /proc/self/status")
    inside_uid = int(text.split()[0])
    assert inside_uid == (65534 if os.geteuid() == 0 else os.geteuid())
    assert "0000000000000000" in text


async def test_every_writable_mount_inside_is_nosuid(gate: Gate) -> None:
    text = await run_shell(gate, "cat /proc/self/mountinfo")
    mounts = []  # (id, parent id, mount point, options), in the order they were mounted
    for line in text.splitlines():
        if " - " in line:
            fields = line.split(" - ")[0].split()
            mounts.append((fields[0], fields[1], fields[4], fields[5].split(",")))
    parent = {m[0]: m[1] for m in mounts}

    def ancestors(mount_id: str) -> set[str]:
        found = set()
        while mount_id in parent and mount_id not in found:
            found.add(mount_id)
            mount_id = parent[mount_id]
        return found

    def in_sight(i: int) -> bool:
        # Covered by a later mount on its own point or a folder above it, unless that one holds it.
        point, mine = mounts[i][2], ancestors(mounts[i][0])
        return not any(later[0] not in mine and (later[2] == point or point.startswith(later[2].rstrip("/") + "/"))
                       for later in mounts[i + 1:])

    writable = {m[2]: m[3] for i, m in enumerate(mounts) if in_sight(i) and "rw" in m[3] and m[2] != "/dev/pts"}
    assert "/dev/shm" in writable and gate.workspace.as_posix() in writable, writable
    assert all("nosuid" in options for options in writable.values()), writable


# --- resource limits -----------------------------------------------------------------


def _hard_process_cap_here() -> bool:
    """RLIMIT_NPROC holds a user's sandbox; root's needs a pids cgroup it can make."""
    if os.geteuid() != 0:
        return True
    cap = CallCgroup.make(1, 1 << 30)
    if cap is not None:
        cap.close()
    return cap is not None


async def test_a_fork_bomb_approved_once_is_stopped_with_a_sentence_and_the_next_command_runs(gate: Gate) -> None:
    # Without a hard cap the bomb would take every PID on this machine before anything looks.
    assert _hard_process_cap_here(), "root without a writable pids cgroup: the fork bomb is not let loose"
    # Each copy waits on its pipeline, so the tree keeps growing until something stops it.
    text = await run_shell(gate, ":(){ :|: ; };:", timeout=120)
    assert "It tried to start too many processes, so the sandbox stopped it." in text, text[-500:]
    assert "ran out of time" not in text  # the limit stopped it, not the clock
    assert "still works" in await run_shell(gate, "echo still works")
    runs = gate.audit.runs()
    assert runs[-2]["ran"]["limit"].startswith("It tried to start too many processes")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's sandboxes need a cap besides RLIMIT_NPROC")
async def test_where_no_cgroup_can_be_made_root_s_sandbox_is_still_stopped_at_the_process_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A container with /sys/fs/cgroup read-only. Thirty sleepers, not a fork bomb: without a
    # hard cap a bomb takes every free PID on the machine before anything can look.
    monkeypatch.setattr(CallCgroup, "make", classmethod(lambda cls, processes, memory_bytes: None))
    door = ProcessDoor(lambda: tmp_path, lambda: None, limits=Limits(processes=20))
    line = "for i in $(seq 30); do sleep 30 & done; wait"
    permit = door.issue(("bash", "-c", line), line, "shell", stdin=None, network=False, how="asked",
                        access=ACCESS_WRITE)
    result = await door.run(permit, risk="exec", timeout_s=60)
    assert result.limit == "It tried to start too many processes, so the sandbox stopped it."
    assert not result.timed_out


async def test_code_stopped_by_a_limit_is_a_failed_run_with_the_sentence(gate: Gate) -> None:
    assert _hard_process_cap_here(), "root without a writable pids cgroup: the fork loop is not let loose"
    ctx = ctx_for(gate, execute_code)
    text = await execute_code.execute({"code": "import os, time\nwhile True:\n    os.fork()\n"}, ctx)
    assert ctx.failed  # her face shows it failed; it was not the user's cancel
    assert "It tried to start too many processes, so the sandbox stopped it." in text, text[-300:]


async def test_a_2_gb_write_approved_once_is_stopped_at_1_gb_with_a_sentence(gate: Gate) -> None:
    big = gate.workspace / "big"
    try:
        text = await run_shell(gate, "head -c 2G /dev/zero > big; echo done", timeout=120)
        assert "It tried to write a file over 1 GB, so the sandbox stopped it." in text, text
        assert big.stat().st_size <= 1 << 30
    finally:
        big.unlink(missing_ok=True)
    assert "still works" in await run_shell(gate, "echo still works")


async def test_code_that_allocates_past_the_memory_limit_gets_a_sentence(gate: Gate) -> None:
    text = await run_code(gate, "block = bytearray(6 * 2**30)")
    assert "It tried to use more than 4 GB of memory, so the sandbox stopped it." in text, text


@pytest.mark.skipif(os.geteuid() != 0, reason="the whole call's memory is held by a cgroup only she may make as root")
async def test_processes_that_together_use_more_than_the_memory_limit_are_stopped_with_a_sentence(
        tmp_path: Path) -> None:
    limits = Limits(memory_bytes=512 << 20)
    probe = CallCgroup.make(8, limits.memory_bytes)
    assert probe is not None and probe.close(), "no cgroup with a memory controller can be made here"
    door = ProcessDoor(lambda: tmp_path, lambda: None, limits=limits)
    # Three processes of 300 MB each: every one under the per-process limit, together over it.
    hold = "import sys, time\nblock = b'x' * (300 << 20)\nprint('holding', flush=True)\ntime.sleep(600)"
    line = f"for i in 1 2 3; do python3 -c \"{hold}\" & done; wait"
    permit = door.issue(("bash", "-c", line), line, "shell", stdin=None, network=False, how="asked",
                        access=ACCESS_WRITE)
    result = await door.run(permit, risk="exec", timeout_s=60)
    assert result.limit == "It tried to use more than 512 MB of memory, so the sandbox stopped it.", result.output
    assert not result.timed_out  # stopped when the kernel ended one, not at the time limit


async def test_the_private_tmp_and_shared_memory_have_size_limits(gate: Gate) -> None:
    text = await run_shell(gate, "head -c 600M /dev/zero > /tmp/fill; echo rc=$?; "
                                 "head -c 100M /dev/zero > /dev/shm/fill; echo rc=$?", timeout=60)
    assert text.count("No space left on device") == 2 and text.count("rc=1") == 2, text


# --- the environment -----------------------------------------------------------------


ALLOWED = {"PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR",
           "COLORTERM", "NO_COLOR", "COLUMNS", "LINES", "PYTHONIOENCODING", "LC_ALL", "LC_CTYPE",
           "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES", "LC_PAPER", "LC_NAME",
           "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
           "PWD"}  # bwrap sets PWD to the working directory (the workspace)


async def test_the_environment_inside_holds_only_allowlisted_names(gate: Gate, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"LC_PASS": "hunter2", "LC_CTYPE": "C.UTF-8", "LC_FOO_SECRET": "s", "LCX": "1",
                        "DISPLAY": ":0", "DBUS_SESSION_BUS_ADDRESS": "unix:abstract=x", "TERM": "xterm",
                        "SSH_AUTH_SOCK": "/run/ssh", "OPENAI_API_KEY": "sk-1"}.items():
        monkeypatch.setenv(name, value)
    text = await run_code(gate, "import os\nprint(sorted(os.environ))")
    names = set(eval(text.splitlines()[0]))  # noqa: S307 (our own print of a list of strings)
    assert "LC_CTYPE" in names and "TERM" in names  # real locale and terminal settings pass
    # Python adds LC_CTYPE itself at start-up in a C locale; everything else came from the allowlist.
    assert names <= ALLOWED, names - ALLOWED
    assert "hunter2" not in text


# --- her own folders -----------------------------------------------------------------


async def test_her_folders_are_hidden_even_when_the_workspace_contains_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config, data = home / ".config" / "companion", home / ".local" / "share" / "companion"
    (data / "plugins").mkdir(parents=True)
    config.mkdir(parents=True)
    (config / "approvals.toml").write_text('lines = ["secret-grant-line"]\n')
    (data / "memory.json").write_text('{"secret": "her memory"}')
    personality = home / "notes" / "her-personality.md"  # a file of hers kept in the workspace
    personality.parent.mkdir()
    personality.write_text("secret personality")
    gate = Gate(home, GrantStore(config / "approvals.toml"), approver=Approves(),
                audit=AuditLog(tmp_path / "approvals.log"), hidden=(config, data, personality))
    # Read-only (auto-safe) and approved alike.
    text = await run_shell(gate, "cat .config/companion/approvals.toml notes/her-personality.md")
    assert gate.approver.asked == [] and "secret" not in text, text
    text = await run_shell(gate, "ls -a .config/companion .local/share/companion; "
                                 "cat .config/companion/approvals.toml .local/share/companion/memory.json; "
                                 "echo 'import os' > .local/share/companion/plugins/x.py; "
                                 "echo 'lines = [\"rm -rf sub\"]' > .config/companion/approvals.toml; "
                                 "echo mine > note.txt; echo changed > notes/her-personality.md")
    assert "secret-grant-line" not in text and "her memory" not in text, text
    assert "Read-only file system" in text
    assert not (data / "plugins" / "x.py").exists()
    assert (config / "approvals.toml").read_text() == 'lines = ["secret-grant-line"]\n'
    assert (home / "note.txt").read_text() == "mine\n"  # the rest of the workspace is writable
    assert personality.read_text() == "secret personality"


# --- pinned files run as approved -----------------------------------------------------


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_a_pinned_file_that_changed_before_the_run_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "run.sh").write_text("echo approved\n")
    door = ProcessDoor(lambda: ws, lambda: None)
    permit = door.issue(("sh", "run.sh"), "sh run.sh", "shell", stdin=None, network=False, how="asked",
                        access=ACCESS_WRITE, pins={"run.sh": _sha(b"echo approved\n")})
    (ws / "run.sh").write_text("echo swapped\n")
    with pytest.raises(ProcessRefused) as refused:
        await door.run(permit, risk="exec", timeout_s=10)
    assert refused.value.code == "changed" and "run.sh changed" in refused.value.sentence


async def test_a_pinned_file_runs_as_approved_even_when_rewritten_during_the_run(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    approved = b"echo approved\n"
    (ws / "run.sh").write_bytes(approved)
    (ws / "run.sh").chmod(0o755)
    os.mkfifo(ws / "go")
    door = ProcessDoor(lambda: ws, lambda: None)
    line = "./run.sh; read x < go; sh run.sh; cat run.sh"
    permit = door.issue(("bash", "-c", line), line, "shell", stdin=None, network=False, how="asked",
                        access=ACCESS_WRITE, pins={"run.sh": _sha(approved)})

    def swap_then_go() -> None:
        with open(ws / "go", "w") as go:  # returns once the command waits on it: run.sh has run once
            (ws / "run.sh").write_text("echo swapped\n")
            go.write("go\n")

    result, _ = await asyncio.gather(door.run(permit, risk="exec", timeout_s=20), asyncio.to_thread(swap_then_go))
    assert result.output.splitlines() == ["approved", "approved", "echo approved"], result.output
    assert (ws / "run.sh").read_text() == "echo swapped\n"


async def test_her_code_inside_a_writable_workspace_stays_read_only(tmp_path: Path) -> None:
    ws = tmp_path / "checkout"
    (ws / "companion").mkdir(parents=True)
    (ws / ".venv" / "lib").mkdir(parents=True)
    (ws / "companion" / "gate.py").write_text("ALLOW = False\n")
    door = ProcessDoor(lambda: ws, lambda: None, read_only=(ws / "companion", ws / ".venv"))
    line = ("echo 'ALLOW = True' > companion/gate.py; echo 'import os' > .venv/lib/evil.pth; "
            "echo work > work.txt")
    permit = door.issue(("bash", "-c", line), line, "shell", stdin=None, network=False, how="asked",
                        access=ACCESS_WRITE)
    result = await door.run(permit, risk="exec", timeout_s=20)
    assert result.output.count("Read-only file system") == 2, result.output
    assert (ws / "companion" / "gate.py").read_text() == "ALLOW = False\n"
    assert not (ws / ".venv" / "lib" / "evil.pth").exists()
    assert (ws / "work.txt").read_text() == "work\n"
