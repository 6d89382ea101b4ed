"""The global push-to-talk key in the window: companion.shortcuts' callbacks as Qt signals.

The portal or X11 backend reports from its own thread; `_arrived` is queued to the Qt thread,
the one place this crossing happens, and re-emitted as `changed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging

from PySide6.QtCore import QObject, Qt, Signal, Slot

from companion.shortcuts import GlobalKey, start_global_key
from companion.ui.imports import import_alone

log = logging.getLogger(__name__)

OFF = "only while her window is focused: the global shortcut is switched off in Settings"


class GlobalPushToTalk(QObject):
    changed = Signal(bool)
    """The key went down (True) or up (False) while another window, or hers, had focus."""
    status_changed = Signal(str)
    _arrived = Signal(bool)

    def __init__(self, parent: QObject | None = None, *, environ: dict[str, str] | None = None,
                 shortcut_id: str = "push-to-talk", description: str = "Push to talk (hold while you speak)") -> None:
        """`shortcut_id` and `description`: how the desktop's shortcut settings list it."""
        super().__init__(parent)
        self.shortcut_id = shortcut_id
        self.description = description
        self.environ = environ
        """The environment to look for a portal or a display in (None: this process's)."""
        self._key: GlobalKey | None = None
        self._wanted: tuple[str, bool] | None = None
        self._lock = asyncio.Lock()
        self.status = "only while her window is focused: the global shortcut is starting"
        self._arrived.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    async def apply(self, key_text: str, enabled: bool = True) -> str:
        """Listen for `key_text` from any window (or stop, when not enabled); the status sentence."""
        async with self._lock:  # one change at a time: Settings may be applied twice quickly
            if self._wanted == (key_text, enabled) and (self._key is not None or not enabled):
                return self.status
            self._wanted = (key_text, enabled)
            self._release()
            if not enabled:
                self._set_status(OFF)
                return self.status
            await import_alone(load_key_backends)  # never beside the core's imports (ui.imports)
            outcome = await asyncio.to_thread(start_global_key, key_text, self._arrived.emit,
                                              environ=self.environ, shortcut_id=self.shortcut_id,
                                              description=self.description)
            self._key = outcome.key
            self._set_status(outcome.status)
            return self.status

    @property
    def active(self) -> bool:
        return self._key is not None

    def close(self) -> None:
        self._release()
        self._wanted = None

    def _release(self) -> None:
        if self._key is not None:
            self._key.close()
            self._key = None

    def _set_status(self, status: str) -> None:
        self.status = status
        self.status_changed.emit(status)

    @Slot(bool)
    def _deliver(self, down: bool) -> None:
        self.changed.emit(down)


def load_key_backends() -> None:
    """Import what starting a global key imports: the portal's D-Bus client, the X11 backend and
    python-xlib with every extension a display may offer (imported when it is opened)."""
    importlib.import_module("companion.shortcuts.portal")
    importlib.import_module("companion.shortcuts.x11")
    importlib.import_module("jeepney.io.blocking")
    with contextlib.suppress(ImportError):  # python-xlib is optional: the X11 backend says so
        extensions = importlib.import_module("Xlib.ext")
        importlib.import_module("Xlib.display")
        for _name, module in extensions.__extensions__:
            with contextlib.suppress(ImportError):
                importlib.import_module(f"Xlib.ext.{module}")
