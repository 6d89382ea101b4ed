"""Her desktop presence: how long taking the global push-to-talk key takes and how soon a press
reaches her (the portal on a private session bus with tests/helpers/portal_service.py; an X11 grab on
Xvfb, pressed with xdotool, whose own start is included), and what reshaping the compact face
costs (on a resize or a new caption, never per frame). Prints JSON.

    .venv/bin/python bench/desktop.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

PRESSES = 20


def _presses(press, count: int) -> list[float]:
    """Milliseconds from asking for a press (or release) to her callback, `count` times."""
    arrived = threading.Event()
    times: list[float] = []

    def on_change(_down: bool) -> None:
        times.append(time.perf_counter())
        arrived.set()

    latencies = []
    key = press(on_change, None)
    for index in range(count):
        arrived.clear()
        start = time.perf_counter()
        press(on_change, index)
        if not arrived.wait(5):
            raise RuntimeError("a press never arrived")
        latencies.append((times[-1] - start) * 1000)
    key.close()
    return latencies


def portal() -> dict:
    from desktop_env import fake_portal, portal_call, session_bus

    from companion.shortcuts import start_global_key

    with session_bus() as address, fake_portal(address):
        started = {}

        def press(on_change, index):
            if index is None:
                t0 = time.perf_counter()
                outcome = start_global_key("F9", on_change, environ={"DBUS_SESSION_BUS_ADDRESS": address})
                started["ms"] = (time.perf_counter() - t0) * 1000
                return outcome.key
            portal_call(address, "Press" if index % 2 == 0 else "Release", "push-to-talk")

        latencies = _presses(press, PRESSES)
    return {"bind_ms": round(started["ms"], 1), "press_to_her_ms_median": round(statistics.median(latencies), 2)}


def x11() -> dict:
    from desktop_env import xdotool, xvfb

    from companion.shortcuts import start_global_key

    with xvfb() as display:
        started = {}

        def press(on_change, index):
            if index is None:
                t0 = time.perf_counter()
                outcome = start_global_key("F9", on_change, environ={"DISPLAY": display})
                started["ms"] = (time.perf_counter() - t0) * 1000
                return outcome.key
            xdotool(display, "keydown" if index % 2 == 0 else "keyup", "F9")

        latencies = _presses(press, PRESSES)
    return {"grab_ms": round(started["ms"], 1),
            "xdotool_to_her_ms_median": round(statistics.median(latencies), 2)}


def compact_mask() -> dict:
    from PySide6.QtWidgets import QApplication

    from companion.ui.desktop.compact import CompactWindow
    from companion.ui.face.widget import FaceWidget

    _app = QApplication.instance() or QApplication([])  # noqa: F841
    window = CompactWindow()
    window.share_face(FaceWidget())
    result = {}
    for width in (200, 520):
        window.resize(width, width + 24)
        times = []
        for _ in range(10):
            start = time.perf_counter()
            window.update_mask()
            times.append((time.perf_counter() - start) * 1000)
        result[f"reshape_{width}px_ms_median"] = round(statistics.median(times), 1)
    return result


def main() -> int:
    print(json.dumps({"portal": portal(), "x11": x11(), "compact_face": compact_mask()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
