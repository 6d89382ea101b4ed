"""What every way of hearing a global key gives back: a running key, or why it can't work here."""

from __future__ import annotations


class ShortcutUnavailable(Exception):
    """This way of listening for a key can't work here; the message says why, in plain words."""


class GlobalKey:
    """A running global shortcut. `on_change(True)` when the key goes down, False when released
    (called on the backend's own thread)."""

    where: str = ""
    """How it reaches every window, e.g. "desktop portal" or "X11 key grab"."""

    def close(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError
