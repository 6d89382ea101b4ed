"""The compact face on a real X server (Xvfb, a compositor): clicks on her see-through pixels reach
the window below; a click on her face opens the full window; without a compositor she says so,
and a compositor started after her makes her see-through without a restart."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

from desktop_env import xdotool, xvfb
from places import HELPERS, ROOT


def _below(display: str):
    """Another client's window under where she will be, listening for clicks."""
    from Xlib import X
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    screen = conn.screen()
    window = screen.root.create_window(0, 0, 600, 600, 0, screen.root_depth,
                                       event_mask=X.ButtonPressMask | X.StructureNotifyMask)
    window.map()
    conn.sync()
    while conn.next_event().type != X.MapNotify:
        pass
    return conn, window


def _clicks(conn, timeout: float) -> list[tuple[int, int]]:
    """Button presses the window below received within `timeout` (waits on its connection)."""
    from Xlib import X

    deadline = time.monotonic() + timeout
    got = []
    while not got and (left := deadline - time.monotonic()) > 0:
        if not conn.pending_events():
            select.select([conn.fileno()], [], [], left)
        while conn.pending_events():
            event = conn.next_event()
            if event.type == X.ButtonPress:
                got.append((event.root_x, event.root_y))
    return got


def _line(process: subprocess.Popen, timeout: float = 20) -> str:
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "the compact face did not answer"
    return process.stdout.readline().strip()


def _compact(display: str) -> subprocess.Popen:
    env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.Popen([sys.executable, str(HELPERS / "compact_on_x.py")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def _wait_for_compositor(display: str) -> None:
    from Xlib import X
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    atom = conn.intern_atom("_NET_WM_CM_S0")
    deadline = time.monotonic() + 10
    # xcompmgr takes the selection as it starts; there is no event to wait on from outside.
    while conn.get_selection_owner(atom) == X.NONE:
        assert time.monotonic() < deadline, "xcompmgr did not start"
        time.sleep(0.05)
    conn.close()


def test_clicks_pass_through_her_see_through_pixels_and_a_click_on_her_opens_the_window():
    with xvfb(compositor=True) as display:
        _wait_for_compositor(display)
        conn, _window = _below(display)
        process = _compact(display)
        try:
            ready = _line(process).split()
            assert ready[0] == "ready" and ready[-1] == "1", ready  # composited: see-through
            x, y, w, h = (int(v) for v in ready[1:5])
            # Her top-left corner is see-through: the click lands on the window below.
            xdotool(display, "mousemove", str(x + 3), str(y + 3), "click", "1")
            assert _clicks(conn, 5) == [(x + 3, y + 3)]
            # Her face is not: the click is hers, and asks for the full window.
            xdotool(display, "mousemove", str(x + w // 2), str(y + (h - 20) // 2), "click", "1")
            assert _line(process) == "opened"
            assert _clicks(conn, 0.3) == []
        finally:
            process.stdin.close()
            process.wait(timeout=20)
            conn.close()


def test_without_a_compositor_she_knows_she_cannot_be_see_through():
    from companion.ui.desktop.compact import translucency_available

    with xvfb() as display:
        assert translucency_available("xcb", display) is False
    with xvfb(compositor=True) as display:
        _wait_for_compositor(display)
        assert translucency_available("xcb", display) is True


def test_a_compositor_started_after_her_makes_her_see_through_without_a_restart():
    with xvfb(window_manager=True) as display:
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
        env.pop("WAYLAND_DISPLAY", None)
        process = subprocess.Popen([sys.executable, str(HELPERS / "compact_app_on_x.py")], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        compositor = None
        try:
            assert _line(process, 60) == "compact 0"  # a square backdrop: nothing composites yet
            compositor = subprocess.Popen(["xcompmgr"], env=env, stderr=subprocess.DEVNULL)
            _wait_for_compositor(display)
            process.stdin.write("started\n")
            process.stdin.flush()
            assert _line(process, 30) == "compact 1"
        finally:
            process.stdin.close()
            process.wait(timeout=30)
            if compositor is not None:
                compositor.terminate()
                compositor.wait(timeout=10)
