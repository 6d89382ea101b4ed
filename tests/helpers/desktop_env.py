"""A private desktop for tests: a D-Bus session bus (dbus-daemon) and a real X server (Xvfb)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def session_bus() -> Iterator[str]:
    """A private session bus; yields its address."""
    daemon = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                              stdout=subprocess.PIPE, text=True)
    try:
        address = daemon.stdout.readline().strip()
        assert address, "dbus-daemon gave no address"
        yield address
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


@contextlib.contextmanager
def fake_portal(address: str, *extra: str) -> Iterator[subprocess.Popen]:
    """tests/helpers/portal_service.py on the bus at `address`, once it owns the portal's name."""
    env = {**os.environ, "DBUS_SESSION_BUS_ADDRESS": address}
    service = subprocess.Popen([sys.executable, str(HERE / "portal_service.py"), *extra],
                               stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert service.stdout.readline().strip() == "ready"
        yield service
    finally:
        service.terminate()
        service.wait(timeout=10)


def portal_call(address: str, member: str, *args: str) -> str:
    """Call the fake portal's test interface (Press, Release, Bound, Closed)."""
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(address) as conn:
        target = DBusAddress("/test", bus_name="org.freedesktop.portal.Desktop",
                             interface="org.companion.TestPortal")
        reply = conn.send_and_get_reply(new_method_call(target, member, "s" if args else None,
                                                        args or None), timeout=10)
        return reply.body[0] if reply.body else ""


@contextlib.contextmanager
def xvfb(*, window_manager: bool = False, compositor: bool = False) -> Iterator[str]:
    """A real X server (with openbox and xcompmgr when asked); yields its DISPLAY."""
    read, write = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1024x768x24",
                               "-nolisten", "tcp", "-noreset", "+extension", "Composite"], pass_fds=(write,))
    os.close(write)
    helpers: list[subprocess.Popen] = []
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()
        assert number, "Xvfb did not start"
        display = f":{number}"
        env = {**os.environ, "DISPLAY": display}
        env.pop("WAYLAND_DISPLAY", None)
        if window_manager:
            helpers.append(subprocess.Popen(["openbox", "--sm-disable"], env=env,
                                            stderr=subprocess.DEVNULL))
        if compositor:
            helpers.append(subprocess.Popen(["xcompmgr"], env=env, stderr=subprocess.DEVNULL))
        yield display
    finally:
        for helper in helpers:
            helper.terminate()
            helper.wait(timeout=10)
        server.terminate()
        server.wait(timeout=10)


def xdotool(display: str, *args: str) -> str:
    return subprocess.run(["xdotool", *args], env={**os.environ, "DISPLAY": display}, check=True,
                          capture_output=True, text=True, timeout=20).stdout.strip()


def have(*programs: str) -> bool:
    return all(shutil.which(p) for p in programs)
