"""The internet for a sandbox, and nothing else: its own network namespace behind slirp4netns.

A networked sandbox never shares her network namespace (that would hand it every loopback
listener and abstract UNIX socket on the computer). It gets a namespace of its own whose
only way out is slirp4netns, a user-mode TCP/IP stack (Debian's `slirp4netns`, what rootless
Podman uses) that opens ordinary sockets on her behalf: started with
`--disable-host-loopback`, the sandbox can't reach her 127.0.0.1 through it, and abstract
sockets belong to a network namespace, so hers are simply not there. DNS inside is slirp's
10.0.2.3, which forwards to her resolver.

bwrap reports the sandbox's first process on `--info-fd` and holds the command on
`--block-fd` until slirp4netns says the interface is up, so the command never runs half
connected. slirp4netns ends when the call does (its `--exit-fd` closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import sys
import time
from collections.abc import Callable

from companion.safety.network import fence

__all__ = ["RESOLV_CONF", "Outbound", "OutboundError", "find_slirp"]

RESOLV_CONF = b"nameserver 10.0.2.3\n"
"""The sandbox's /etc/resolv.conf: slirp's DNS forwarder."""
_READY_TIMEOUT_S = 10.0
_NS_GET_USERNS = 0xB701  # ioctl(2) on a namespace file: the user namespace that owns it


class OutboundError(RuntimeError):
    """The sandbox's network could not be set up; the message is a sentence."""


def find_slirp() -> str | None:
    """The slirp4netns executable, or None."""
    return shutil.which("slirp4netns")


class Outbound:
    """One sandbox's way out. Give `bwrap_args()` to bwrap and `child_fds` to the runner, then
    `await attach()` once bwrap has started; `await close()` when the call is over."""

    def __init__(self, slirp: str) -> None:
        self._slirp = slirp
        self._info_r, self._info_w = os.pipe()
        self._block_r, self._block_w = os.pipe()
        self.child_fds: tuple[int, ...] = (self._info_w, self._block_r)
        """bwrap's ends: whoever starts bwrap closes them (the runner does, once it has started)."""
        self._process: asyncio.subprocess.Process | None = None
        self._exit_w: int | None = None

    def bwrap_args(self) -> list[str]:
        return ["--info-fd", str(self._info_w), "--block-fd", str(self._block_r)]

    async def attach(self) -> None:
        """Connect the started sandbox to slirp4netns and let its command run.

        Raises OutboundError when it can't (the command then stays blocked; end the call).
        """
        try:
            # To the end of bwrap's JSON, not of the pipe: the end of the pipe says nothing
            # about whether bwrap said all it had to.
            info = await _read_to_end(self._info_r, done=_whole_json)
            pid = int(json.loads(info)["child-pid"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OutboundError("The sandbox ended before its network could be set up.") from exc
        await _loopback_up(pid)
        ready_r, ready_w = os.pipe()
        exit_r, self._exit_w = os.pipe()
        handed = [ready_w, exit_r]
        # By path: given a pid, slirp4netns joins that process's user namespace, which by the
        # time the command waits is a nested one with no power over the sandbox's network.
        argv = [self._slirp, "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-seccomp",
                f"--ready-fd={ready_w}", f"--exit-fd={exit_r}", "--netns-type=path"]
        if os.geteuid() == 0:
            # As root, slirp4netns itself runs in a mount namespace of its own with its
            # capabilities dropped (it parses untrusted packets); as a user it has none to drop.
            argv.append("--enable-sandbox")
        try:
            owner = _foreign_owner(f"/proc/{pid}/ns/net")
            if owner is not None:
                # Not root: slirp4netns needs the user namespace that owns the network.
                handed.append(owner)
                argv.append(f"--userns-path=/proc/self/fd/{owner}")
            self._process = await asyncio.create_subprocess_exec(
                *argv, f"/proc/{pid}/ns/net", "tap0", pass_fds=handed, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            raise OutboundError(f"slirp4netns could not start ({exc.strerror or exc}).") from exc
        finally:
            for fd in handed:
                os.close(fd)
        try:
            ready = await asyncio.wait_for(_read_to_end(ready_r, 1), _READY_TIMEOUT_S)
        except TimeoutError:
            ready = b""
        finally:
            os.close(ready_r)
        if ready != b"1":
            said = await self._said()
            raise OutboundError(f"The sandbox's internet connection could not be set up ({said}).")
        await _fence(pid)
        # The command may run now.
        os.write(self._block_w, b"1")
        self._close_fd("_block_w")

    async def close(self) -> None:
        """Stop slirp4netns (if it started) and release everything."""
        for name in ("_info_r", "_block_w", "_exit_w"):
            self._close_fd(name)
        if self._process is not None and self._process.returncode is None:
            try:
                await asyncio.wait_for(self._process.wait(), 2.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
                await self._process.wait()

    async def _said(self) -> str:
        assert self._process is not None
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
        await self._process.wait()
        assert self._process.stderr is not None
        lines = (await self._process.stderr.read()).decode(errors="replace").strip().splitlines()
        # Its last words are "child failed(1)" / "parent failed"; the cause comes before them.
        causes = [line for line in lines if not line.endswith(("failed", "failed(1)"))]
        return causes[-1] if causes else (lines[-1] if lines else f"exit {self._process.returncode}")

    def _close_fd(self, name: str) -> None:
        fd = getattr(self, name)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
            setattr(self, name, None)


async def _fence(pid: int) -> None:
    """Put this computer and the local network out of the sandbox's reach (fence.py) before
    its command runs; raises OutboundError when that can't be done (the call is then refused)."""
    net = f"/proc/{pid}/ns/net"
    try:
        owner = _foreign_owner(net)
    except OSError as exc:
        raise OutboundError("The sandbox ended before its network could be set up.") from exc
    argv = [sys.executable, "-I", "-S", fence.__file__, net, *([str(owner)] if owner is not None else [])]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, pass_fds=(owner,) if owner is not None else (), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        raise OutboundError(f"I couldn't keep this computer out of the command's reach ({exc.strerror or exc}).") from exc
    finally:
        if owner is not None:
            os.close(owner)
    _out, said = await process.communicate("\n".join(fence.fenced_prefixes()).encode())
    if process.returncode != 0:
        detail = said.decode(errors="replace").strip().splitlines()
        raise OutboundError("I couldn't keep this computer and its network out of the command's reach "
                            f"({detail[-1] if detail else f'exit {process.returncode}'}).")


async def _loopback_up(pid: int) -> None:
    """Wait until bwrap has brought up the sandbox's loopback (its first step inside).

    slirp4netns brings `lo` up too, and the kernel then gives it 127.0.0.1 by itself: started
    while bwrap was still adding that address, bwrap fails ("loopback: Failed RTM_NEWADDR").
    The loopback's broadcast route appears in the namespace's routing table once it is up;
    bwrap reports no event for it, so look every 2 ms (it takes a few).
    """
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/net/fib_trie", encoding="ascii", errors="replace") as table:
                if "127.255.255.255" in table.read():
                    return
        except OSError as exc:
            raise OutboundError("The sandbox ended before its network could be set up.") from exc
        await asyncio.sleep(0.002)
    raise OutboundError("The sandbox's network did not come up in time.")


def _foreign_owner(netns: str) -> int | None:
    """A descriptor of the user namespace owning `netns` when it isn't ours (we are not root), else None."""
    net = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        owner = fcntl.ioctl(net, _NS_GET_USERNS)
    finally:
        os.close(net)
    if os.geteuid() == 0 or os.fstat(owner).st_ino == os.stat("/proc/self/ns/user").st_ino:
        os.close(owner)
        return None
    return owner


def _whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


async def _read_to_end(fd: int, limit: int = 1 << 16, done: Callable[[bytes], bool] | None = None) -> bytes:
    """Read `fd` to its end (or `limit` bytes, or until `done(data)`) on the loop: cancelling
    leaves no thread reading it."""
    os.set_blocking(fd, False)
    loop = asyncio.get_running_loop()
    data = b""
    while len(data) < limit:
        readable = loop.create_future()
        loop.add_reader(fd, lambda ready=readable: ready.done() or ready.set_result(None))
        try:
            await readable
        finally:
            loop.remove_reader(fd)
        try:
            chunk = os.read(fd, limit - len(data))
        except BlockingIOError:
            continue
        if not chunk:
            break
        data += chunk
        if done is not None and done(data):
            break
    return data
