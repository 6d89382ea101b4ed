"""Safety and action-tool overhead; prints JSON.

Measures: the gate's decision time per command line (over the decision table), the code
scan of a 300-line program, the cost to start and reap a process bare and inside the
bubblewrap sandbox (through the gate's one door), how long
a timed-out command takes to be stopped past its limit, a whole auto-safe `shell` call, and
web_extract on a local 100 KB / 1 MB article (fetch + trafilatura).

`sandbox_cost`: what least privilege adds to one sandboxed call (`true` and `ls -la` in a
small workspace, median and p95): the sandbox as it was (no user namespace, no seccomp, no
limits; the network shared) against today's (user namespace, seccomp filter, prlimit, a pids
cgroup when root, masks; the network through slirp4netns), without and with the network.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "helpers"), str(ROOT / "tests" / "safety")]

from test_gate_decisions import TABLE  # noqa: E402

from companion.config import Settings, ToolSettings  # noqa: E402
from companion.safety.command_line.code_scan import scan_code  # noqa: E402
from companion.safety.gate import Gate  # noqa: E402
from companion.safety.grants import GrantStore  # noqa: E402
from companion.safety.sandbox import probe, sandbox  # noqa: E402
from companion.safety.sandbox._runner import run_process  # noqa: E402
from companion.tools.action import shell  # noqa: E402
from companion.tools.builtin import web_extract  # noqa: E402
from companion.tools.context import ToolContext  # noqa: E402


def stats_ms(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {"median_ms": round(statistics.median(values) * 1000, 3),
            "p90_ms": round(values[max(0, int(len(values) * 0.9) - 1)] * 1000, 3)}


def stats_p95(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {"median_ms": round(statistics.median(values) * 1000, 2),
            "p95_ms": round(values[max(0, int(len(values) * 0.95 + 0.5) - 1)] * 1000, 2)}


def old_bwrap(workspace: Path, network: bool, argv: list[str]) -> list[str]:
    """The sandbox before least privilege: no user namespace, no seccomp, no limits, shared network."""
    args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden = [p for p in ("/home", "/root", "/run", "/media", "/mnt", "/var/tmp", "/tmp") if Path(p).is_dir()]
    for folder in hidden:
        args += ["--tmpfs", folder]
    args += ["--bind", str(workspace), str(workspace)]
    args += [x for folder in hidden if folder != "/tmp" for x in ("--remount-ro", folder)]
    args += ["--chdir", str(workspace), "--unshare-all", *(["--share-net"] if network else []),
             "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--"]
    return args + argv


async def sandbox_cost(tmp: Path, runs: int = 30) -> dict[str, object]:
    workspace = tmp / "cost"
    workspace.mkdir()
    for i in range(20):
        (workspace / f"file{i}.txt").write_text("x" * i)
    bwrap = probe.find_bwrap()
    assert bwrap is not None and probe.unavailable_reason() is None, probe.unavailable_reason()
    out: dict[str, object] = {"runs": runs}
    for network in (False, True):
        for label, argv in (("true", ["true"]), ("ls", ["ls", "-la"])):
            old, new = [], []
            for _ in range(runs):
                start = time.perf_counter()
                await run_process(old_bwrap(workspace, network, argv), cwd=workspace, timeout_s=30)
                old.append(time.perf_counter() - start)
                start = time.perf_counter()
                policy = sandbox.SandboxPolicy(workspace, writable=True, network=network)
                prepared = sandbox.prepare(bwrap, policy, argv)
                outbound = prepared.outbound
                attach = (lambda pid, o=outbound: o.attach(pid)) if outbound is not None else None
                result = await run_process(prepared.argv, cwd=workspace, timeout_s=30,
                                           pass_fds=prepared.hand_over(), started=attach)
                await prepared.release()
                new.append(time.perf_counter() - start)
                assert result.exit_code == 0, result.output
            key = f"{label}_{'network' if network else 'offline'}"
            old_s, new_s = stats_p95(old), stats_p95(new)
            out[key] = {"old": old_s, "new": new_s,
                        "added_median_ms": round(new_s["median_ms"] - old_s["median_ms"], 2)}
    return out


async def identity_cost(tmp: Path, runs: int = 30) -> dict[str, object]:
    """What issue 33 adds per call: the sandbox's user as nobody on the host (a user namespace
    per call, an idmapped workspace, the launcher) against the old mapping to root, for a
    writable and a read-only run, and Landlock on a read-only run (`true` in a small workspace
    under a folder only root may enter, as pytest's are)."""
    import os

    from companion.safety.sandbox import identity, landlock

    workspace = tmp / "closed" / "identity"
    workspace.mkdir(parents=True)
    (tmp / "closed").chmod(0o700)
    bwrap = probe.find_bwrap()
    assert bwrap is not None
    nobody, ruled = identity.for_workspace, landlock.argv_for

    def root_mapped(workspace: str, *, writable: bool, known: frozenset[str], fds: list[int]) -> identity.Identity:
        uid = str(identity.SANDBOX_UID)
        return identity.Identity(0, ["--unshare-user", "--uid", uid, "--gid", uid, "--disable-userns"])

    variants = {"root_mapped": (root_mapped, ruled), "nobody": (nobody, ruled),
                "nobody_without_landlock": (nobody, lambda python, writable: [])}
    out: dict[str, object] = {"runs": runs, "as_root": os.geteuid() == 0}
    for writable in (True, False):
        times: dict[str, list[float]] = {label: [] for label in variants}
        for _ in range(runs):
            for label, (who, rules) in variants.items():
                identity.for_workspace, landlock.argv_for = who, rules
                try:
                    start = time.perf_counter()
                    prepared = sandbox.prepare(bwrap, sandbox.SandboxPolicy(workspace, writable=writable), ["true"])
                    result = await run_process(prepared.argv, cwd=workspace, timeout_s=30,
                                               pass_fds=prepared.hand_over())
                    await prepared.release()
                    times[label].append(time.perf_counter() - start)
                    assert result.exit_code == 0, (label, result.output)
                finally:
                    identity.for_workspace, landlock.argv_for = nobody, ruled
        found = {label: stats_p95(values) for label, values in times.items()}
        found["nobody_added_median_ms"] = round(found["nobody_without_landlock"]["median_ms"]
                                                - found["root_mapped"]["median_ms"], 2)
        if not writable:
            found["landlock_added_median_ms"] = round(found["nobody"]["median_ms"]
                                                      - found["nobody_without_landlock"]["median_ms"], 2)
        out["writable" if writable else "read_only"] = found
    return out


def gate_decisions(tmp: Path) -> dict[str, object]:
    workspace = tmp / "ws"
    (workspace / "sub").mkdir(parents=True)
    gate = Gate(workspace, GrantStore(tmp / "approvals.toml"))
    times = []
    for _ in range(5):
        for line, _ in TABLE:
            start = time.perf_counter()
            gate.precheck(line)
            times.append(time.perf_counter() - start)
    return {"lines": len(TABLE), **stats_ms(times)}


def code_scan() -> dict[str, object]:
    program = "\n".join(f"x{i} = sum(range({i}))\nprint(x{i})" for i in range(150))
    times = []
    for _ in range(20):
        start = time.perf_counter()
        scan_code(program)
        times.append(time.perf_counter() - start)
    return {"lines": 300, **stats_ms(times)}


async def runner(tmp: Path) -> dict[str, object]:
    spawn = []
    for _ in range(20):
        start = time.perf_counter()
        await run_process(["true"], cwd=tmp, timeout_s=10)
        spawn.append(time.perf_counter() - start)
    overrun = []
    for _ in range(3):
        result = await run_process(["sleep", "60"], cwd=tmp, timeout_s=0.2)
        overrun.append(result.duration_s - 0.2)
    workspace = tmp / "ws"
    gate = Gate(workspace, GrantStore(tmp / "approvals.toml"))
    sandboxed = []
    for _ in range(20):
        verdict = await gate.review("echo hi")
        start = time.perf_counter()
        await gate.run(verdict, risk="exec", timeout_s=10)
        sandboxed.append(time.perf_counter() - start)
    calls = []
    for _ in range(10):
        ctx = ToolContext(workspace=workspace, data_dir=tmp, services={"gate": gate}, risk="exec")
        start = time.perf_counter()
        await shell.execute({"command": "ls -la"}, ctx)
        calls.append(time.perf_counter() - start)
    return {"spawn_true": stats_ms(spawn), "spawn_true_sandboxed": stats_ms(sandboxed),
            "stop_after_timeout_overrun": stats_ms(overrun),
            "shell_auto_safe_ls": stats_ms(calls)}


def serve(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def web(tmp: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    settings = Settings(tools=ToolSettings(web_allow_private=True))
    for label, paragraphs in (("100kb", 1450), ("1mb", 14000)):
        article = "".join(f"<p>Paragraph {i}: otters hold hands while they sleep, number {i}.</p>"
                          for i in range(paragraphs))
        body = f"<html><body><article><h1>Otters</h1>{article}</article></body></html>".encode()
        server = serve(body)
        times = []
        for _ in range(3):
            ctx = ToolContext(workspace=tmp, data_dir=tmp, services={"settings": settings})
            start = time.perf_counter()
            await web_extract.execute({"url": f"http://127.0.0.1:{server.server_address[1]}/"}, ctx)
            times.append(time.perf_counter() - start)
        server.shutdown()
        server.server_close()
        out[f"web_extract_{label}"] = {"bytes": len(body), **stats_ms(times)}
    return out


async def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        result = {
            "gate_precheck": gate_decisions(tmp),
            "code_scan": code_scan(),
            **await runner(tmp),
            **await web(tmp),
            "sandbox_cost": await sandbox_cost(tmp),
            "identity_cost": await identity_cost(tmp),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
