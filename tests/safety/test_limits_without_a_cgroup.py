"""Limits hold without a cgroup: shared memory and memfd are counted (issue 33, item 5), and a
fork bomb is stopped with her sentence while the user's other programs keep forking (issue 38).

As a real unprivileged user (root drops to uid 65534 for the test) no cgroup can be made, and
RLIMIT_DATA counts only private memory: a shared anonymous mapping, a memfd, System V shared
memory and a shared mapping of /dev/zero each held 512 MB under a 256 MB limit, System V
message queues 500 MB and semaphore sets as much as asked (issue 50, item 6). The seccomp filter
keeps them out when no cgroup holds the call's memory, and /dev/zero is /dev/full there (zeros
that can't be mapped); where a cgroup holds it (as root), the cgroup counts them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import companion
from companion.safety.consent.approval import ACCESS_WRITE
from companion.safety.sandbox.cgroup import CallCgroup
from companion.safety.sandbox.door import ProcessDoor
from companion.safety.sandbox.limits import Limits

HOLD = r'''
import ctypes, mmap, os, sys
MB = 1 << 20
size = 512 * MB
what = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
try:
    if what == "shared":
        m = mmap.mmap(-1, size, flags=mmap.MAP_SHARED)
        for i in range(0, size, 4096): m[i] = 1
    elif what == "memfd":
        fd = os.memfd_create("x")
        for _ in range(512): os.write(fd, b"x" * MB)
    elif what == "sysv":
        libc.shmat.restype = ctypes.c_void_p
        segment = libc.shmget(0, size, 0o1000 | 0o600)
        if segment < 0: raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        ctypes.memset(libc.shmat(segment, None, 0), 1, size)
    elif what == "msgq":  # System V message queues: 16 KB each in the call's IPC namespace, 32000 of them
        buffer, held, goal = ctypes.create_string_buffer(b"\x01" + b"\0" * 7 + b"x" * 8192), 0, 384 * MB
        while held < goal:
            queue = libc.msgget(0, 0o1000 | 0o600)
            if queue < 0: raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
            while held < goal and libc.msgsnd(queue, buffer, 8192, 0o4000) == 0: held += 8192
            if ctypes.get_errno() not in (0, 11): raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    elif what == "sem":  # System V semaphore sets: 32000 semaphores of 64 bytes each
        for _ in range(size // (32000 * 64)):
            if libc.semget(0, 32000, 0o1000 | 0o600) < 0:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    elif what == "devzero":  # a shared mapping of /dev/zero is shared memory too
        with open("/dev/zero", "r+b") as zero:
            assert zero.read(4) == bytes(4)  # it still reads zeros
            m = mmap.mmap(zero.fileno(), size, flags=mmap.MAP_SHARED)
        for i in range(0, size, 4096): m[i] = 1
    print("HELD", what)
except (OSError, MemoryError) as exc:
    print("STOPPED", what, exc)
'''

DRIVER = r'''
import asyncio, json, sys
sys.path[:0] = json.loads(sys.argv[2])
from pathlib import Path
from companion.safety.consent.approval import ACCESS_WRITE
from companion.safety.sandbox.door import ProcessDoor
from companion.safety.sandbox.limits import Limits

async def main():
    door = ProcessDoor(lambda: Path(sys.argv[1]), lambda: None, limits=Limits(memory_bytes=256 << 20))
    said = {}
    for what in ("shared", "memfd", "sysv", "msgq", "sem", "devzero"):
        argv = ("/usr/bin/python3", "-I", "-c", sys.argv[3], what)
        permit = door.issue(argv, what, "execute_code", stdin=None, network=False, how="asked", access=ACCESS_WRITE)
        result = await door.run(permit, risk="exec", timeout_s=60)
        said[what] = result.output.strip() + (" " + result.limit if result.limit else "")
    print(json.dumps(said))

asyncio.run(main())
'''


BOMB_DRIVER = r'''
import asyncio, json, os, subprocess, sys, time
sys.path[:0] = json.loads(sys.argv[2])
from pathlib import Path
from companion.safety.consent.approval import ACCESS_WRITE
from companion.safety.sandbox.door import ProcessDoor

def bombs() -> int:
    found = 0
    for name in os.listdir("/proc"):
        try:
            found += name.isdigit() and os.stat(f"/proc/{name}").st_uid == os.getuid() and \
                ":|:" in Path(f"/proc/{name}/cmdline").read_text(errors="replace")
        except OSError:
            pass
    return found

async def main():
    door = ProcessDoor(lambda: Path(sys.argv[1]), lambda: None)
    line = ":(){ :|: ; };:"
    permit = door.issue(("bash", "-c", line), line, "shell", stdin=None, network=False, how="asked",
                        access=ACCESS_WRITE)
    started = time.monotonic()
    run = asyncio.ensure_future(door.run(permit, risk="exec", timeout_s=120))
    while bombs() < 100 and not run.done():  # the bomb is growing: the user's own programs still fork
        await asyncio.sleep(0.01)
    forked = subprocess.run(["/bin/true"]).returncode == 0
    result = await run
    print(json.dumps({"limit": result.limit, "timed_out": result.timed_out, "forked": forked,
                      "seconds": round(time.monotonic() - started, 2)}))

asyncio.run(main())
'''


def run_as_a_user(workspace: Path, driver: str = DRIVER) -> dict[str, str]:
    """The door run by a process of an unprivileged user (uid 65534 when we are root)."""
    paths = [sysconfig.get_paths()["purelib"], str(Path(companion.__file__).resolve().parent.parent)]
    argv = ["/usr/bin/python3", "-I", "-c", driver, str(workspace), json.dumps(paths), HOLD]
    drop = {"user": 65534, "group": 65534, "extra_groups": []} if os.geteuid() == 0 else {}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd="/",
                          env={"PATH": "/usr/bin:/bin", "HOME": str(workspace)}, **drop)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def user_workspace():
    if not os.path.exists("/usr/bin/python3"):
        pytest.skip("the unprivileged side runs the system's python3 (a venv's may live in root's home)")
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="companion-limits-"))
    if os.geteuid() == 0:
        os.chown(folder, 65534, 65534)
    yield folder
    shutil.rmtree(folder)


def test_as_an_unprivileged_user_shared_memory_and_memfd_are_held_to_the_limit(user_workspace: Path) -> None:
    said = run_as_a_user(user_workspace)
    for what, text in said.items():
        assert "HELD" not in text and "STOPPED" in text, (what, said)


def test_as_an_unprivileged_user_a_fork_bomb_is_stopped_with_her_sentence_and_the_user_keeps_forking(
        user_workspace: Path) -> None:
    # RLIMIT_NPROC, counted in the call's own user namespace, holds the bomb; the door sees it at
    # the cap and stops it (bash would retry its forks until the time limit).
    said = run_as_a_user(user_workspace, BOMB_DRIVER)
    assert said["limit"] == "It tried to start too many processes, so the sandbox stopped it.", said
    assert not said["timed_out"] and said["forked"], said
    print(f"fork bomb stopped after {said['seconds']} s")


@pytest.mark.skipif(os.geteuid() != 0, reason="a cgroup of its own per call is made only as root")
async def test_where_a_cgroup_holds_the_call_it_counts_shared_memory_and_memfd(tmp_path: Path) -> None:
    probe = CallCgroup.make(8, 256 << 20)
    assert probe is not None and probe.holds_memory and probe.close(), "no memory cgroup can be made here"
    door = ProcessDoor(lambda: tmp_path, lambda: None, limits=Limits(memory_bytes=256 << 20))
    for what in ("shared", "memfd"):
        argv = (sys.executable, "-I", "-c", HOLD, what)
        permit = door.issue(argv, what, "execute_code", stdin=None, network=False, how="asked", access=ACCESS_WRITE)
        result = await door.run(permit, risk="exec", timeout_s=60)
        assert "HELD" not in result.output, (what, result.output)
        assert result.limit == "It tried to use more than 256 MB of memory, so the sandbox stopped it.", result
