"""Her presence on the desktop beyond the window: the global push-to-talk key (more to come here:
the compact face, the single instance). CompanionApp makes one and calls start() and close()."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from PySide6.QtCore import QObject

from companion.config import Settings
from companion.ui.global_keys import GlobalPushToTalk

log = logging.getLogger(__name__)


class DesktopPresence(QObject):
    def __init__(self, app, *, environ: dict[str, str] | None = None) -> None:
        """`app`: the CompanionApp (its window, keeper and task spawner)."""
        super().__init__(app)
        self.app = app
        self.global_keys = GlobalPushToTalk(self, environ=environ)
        self.global_keys.changed.connect(app.window.global_push_to_talk)
        self._started = False
        self._dialog = None
        app.keeper.changed.connect(self._settings_changed)

    def start(self, environ: dict[str, str] | None = None) -> asyncio.Task:
        """Take the global push-to-talk key (the real app does; tests that want it call this,
        with the `environ` of a private bus or X server)."""
        if environ is not None:
            self.global_keys.environ = environ
        self._started = True
        return self.app._spawn(self._apply_keys(self.app.keeper.settings))

    async def _apply_keys(self, settings: Settings) -> str:
        ui = settings.ui
        return await self.global_keys.apply(ui.push_to_talk_key, ui.global_push_to_talk)

    def _settings_changed(self, settings: Settings) -> None:
        if self._started:
            self.app._spawn(self._apply_keys(settings))

    def settings_opened(self, dialog) -> None:
        """Settings shows where push-to-talk works, and follows it while open."""
        rows = getattr(dialog.voice, "shortcuts", None)
        if rows is None:
            return
        rows.set_status(self.global_keys.status if self._started else "")
        self.global_keys.status_changed.connect(rows.set_status)
        dialog.finished.connect(lambda _result: self._forget(rows))

    def _forget(self, rows) -> None:
        with contextlib.suppress(RuntimeError, TypeError):  # already gone with the dialog
            self.global_keys.status_changed.disconnect(rows.set_status)

    def close(self) -> None:
        self.global_keys.close()
