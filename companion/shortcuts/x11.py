"""Push-to-talk on X11 without a portal: a passive key grab on the root window (python-xlib).

The X server then sends that key to us whichever window has focus, and to no one else.
A grab only matches its exact modifiers, so it is taken with and without Caps Lock and Num Lock.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable

from companion.shortcuts.backend import GlobalKey, ShortcutUnavailable
from companion.shortcuts.keys import Combination

log = logging.getLogger(__name__)

_REPEAT_WINDOW_S = 0.03
"""X reports a held key as release + press pairs with one timestamp; the press follows at once."""


class X11Key(GlobalKey):
    where = "X11 key grab"

    def __init__(self, combination: Combination, on_change: Callable[[bool], None], *,
                 display: str | None = None) -> None:
        try:
            from Xlib import XK, X, error
            from Xlib import display as xdisplay
        except ImportError as exc:
            raise ShortcutUnavailable("python-xlib is not installed") from exc
        self._X = X
        self._on_change = on_change
        self._down = False
        try:
            self._display = xdisplay.Display(display)
        except (error.DisplayError, error.ConnectionClosedError, OSError) as exc:
            raise ShortcutUnavailable(f"the X11 display {display or ''} can't be opened ({exc})") from exc
        keysym = XK.string_to_keysym(combination.keysym)
        keycode = self._display.keysym_to_keycode(keysym) if keysym else 0
        if not keycode:
            self._display.close()
            raise ShortcutUnavailable(f"this keyboard has no {combination.keysym} key")
        self._keycode = keycode
        self._modifiers = _mask(X, combination.modifiers, self._display)
        self._root = self._display.screen().root
        caught = error.CatchError(error.BadAccess)
        for extra in _lock_variants(X, self._display):
            self._root.grab_key(keycode, self._modifiers | extra, True, X.GrabModeAsync, X.GrabModeAsync,
                                onerror=caught)
        self._display.sync()
        if caught.get_error():
            self._display.close()
            raise ShortcutUnavailable("another program already holds that key on this X11 display")
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._listen, name="x11-shortcut", daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        X = self._X
        fd = self._display.fileno()
        try:
            while True:
                if not self._display.pending_events():
                    ready, _, _ = select.select([fd, self._stop_r], [], [])
                    if self._stop_r in ready:
                        return
                    if not self._display.pending_events():
                        continue
                event = self._display.next_event()
                if event.type not in (X.KeyPress, X.KeyRelease) or event.detail != self._keycode:
                    continue
                if event.type == X.KeyRelease and self._repeats(event):
                    continue
                self._set(event.type == X.KeyPress)
        except Exception:  # the display went away (X server stopped): the shortcut ends quietly
            log.info("X11 shortcut stopped", exc_info=True)

    def _repeats(self, release) -> bool:
        """True (and the matching press consumed) when this release is half of an auto-repeat."""
        X = self._X
        if not self._display.pending_events():
            ready, _, _ = select.select([self._display.fileno()], [], [], _REPEAT_WINDOW_S)
            if not ready or not self._display.pending_events():
                return False
        following = self._display.next_event()
        if following.type == X.KeyPress and following.detail == self._keycode and following.time == release.time:
            return True
        self._set(False)  # a real release; then the event that followed it
        if following.type == X.KeyPress and following.detail == self._keycode:
            self._set(True)
        return True

    def _set(self, down: bool) -> None:
        if down == self._down:
            return
        self._down = down
        try:
            self._on_change(down)
        except Exception:
            log.exception("push-to-talk receiver failed")

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(timeout=2.0)
        try:
            for extra in _lock_variants(self._X, self._display):
                self._root.ungrab_key(self._keycode, self._modifiers | extra)
            self._display.close()
        except Exception:  # the X server may already be gone
            log.debug("X11 ungrab failed", exc_info=True)
        os.close(self._stop_r)
        os.close(self._stop_w)


def _mask(X, modifiers: frozenset[str], display) -> int:
    mask = 0
    if "Ctrl" in modifiers:
        mask |= X.ControlMask
    if "Shift" in modifiers:
        mask |= X.ShiftMask
    if "Alt" in modifiers:
        mask |= X.Mod1Mask
    if "Meta" in modifiers:
        mask |= X.Mod4Mask
    return mask


def _lock_variants(X, display) -> tuple[int, ...]:
    # Num Lock is Mod2 on every common keymap; Caps Lock is LockMask.
    return (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask)
