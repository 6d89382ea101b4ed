"""A push-to-talk key that works from any window: the desktop's GlobalShortcuts portal, else an X11 key grab.

No Qt here: the window's adapter (companion.ui.desktop.global_keys) turns the callbacks into signals,
and `companion doctor` asks `where_it_works()` the same question.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

from companion.shortcuts.backend import GlobalKey, ShortcutUnavailable
from companion.shortcuts.keys import Combination

__all__ = ["Combination", "GlobalKey", "ShortcutUnavailable", "start_global_key", "where_it_works"]

log = logging.getLogger(__name__)

ONLY_FOCUSED = "only while her window is focused"


@dataclass(frozen=True)
class Outcome:
    key: GlobalKey | None
    status: str
    """Where push-to-talk works: "from any window (desktop portal)", or "only while her window is
    focused: <why>"."""


def start_global_key(text: str, on_change: Callable[[bool], None], *, environ: dict[str, str] | None = None,
                     portal_timeout: float = 60.0, probe: bool = False, shortcut_id: str = "push-to-talk",
                     description: str = "Push to talk (hold while you speak)") -> Outcome:
    """Blocking (run it off the Qt thread): the portal first, then an X11 grab, else why neither.
    `probe`: only find out (the portal is asked its version, not to bind: binding may show the
    desktop's dialog; an X11 grab is taken and let go); the outcome then holds no key."""
    from companion.shortcuts.portal import PortalKey, portal_version
    from companion.shortcuts.x11 import X11Key

    env = os.environ if environ is None else environ
    try:
        combination = Combination.parse(text)
    except ValueError as exc:
        return Outcome(None, f"{ONLY_FOCUSED}: {exc}")
    reasons = []
    bus = env.get("DBUS_SESSION_BUS_ADDRESS", "")
    if bus:
        try:
            if probe:
                portal_version(bus)
                return Outcome(None, f"from any window ({PortalKey.where})")
            key: GlobalKey = PortalKey(combination, on_change, bus=bus, timeout=portal_timeout,
                                       shortcut_id=shortcut_id, description=description)
            return Outcome(key, f"from any window ({key.where})")
        except ShortcutUnavailable as exc:
            reasons.append(str(exc))
    else:
        reasons.append("there is no desktop session bus for the shortcuts portal")
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        reasons.append("on Wayland an X11 key grab would hear only X11 windows")
    elif env.get("DISPLAY"):
        try:
            key = X11Key(combination, on_change, display=env["DISPLAY"])
            if probe:
                key.close()
                return Outcome(None, f"from any window ({key.where})")
            return Outcome(key, f"from any window ({key.where})")
        except ShortcutUnavailable as exc:
            reasons.append(str(exc))
    else:
        reasons.append("there is no X11 display to grab the key on")
    log.info("global push-to-talk unavailable: %s", "; ".join(reasons))
    return Outcome(None, f"{ONLY_FOCUSED}: " + "; ".join(reasons) + ".")


def where_it_works(text: str, *, environ: dict[str, str] | None = None) -> str:
    """For doctor: where push-to-talk would work, found without binding anything."""
    return start_global_key(text, lambda _down: None, environ=environ, probe=True).status
