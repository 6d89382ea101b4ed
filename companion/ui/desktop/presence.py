"""Her presence on the desktop beyond the window: the global push-to-talk key and the compact face
(menu, tray and a shortcut switch to it). CompanionApp makes one and calls start() and close()."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QShortcut

from companion.config import Settings, default_config_dir
from companion.desktop_entry import Places, launch_command, launcher_refusal, set_autostart
from companion.ui.desktop.caption import CompactCaption
from companion.ui.desktop.compact import NO_TRANSLUCENCY, CompactWindow, translucency_available
from companion.ui.desktop.global_keys import GlobalPushToTalk

log = logging.getLogger(__name__)

COMPOSITOR_CHECK_MS = 3000
"""While the small face shows without see-through, how often she looks for a compositor again."""
NO_COMPOSITOR_CAPTION = "I can't be see-through here: no compositor"


class DesktopPresence(QObject):
    def __init__(self, app, *, environ: dict[str, str] | None = None) -> None:
        """`app`: the CompanionApp (its window, keeper and task spawner)."""
        super().__init__(app)
        self.app = app
        self.global_keys = GlobalPushToTalk(self, environ=environ)
        self.global_keys.changed.connect(app.window.global_push_to_talk)
        self.compact_key = GlobalPushToTalk(self, environ=environ, shortcut_id="compact-face",
                                            description="Show her as the small face, or her full window")
        """The compact-face key from any window (she may be only the small face, unfocused)."""
        self.compact_key.changed.connect(lambda down: down and self.compact_action.toggle())
        self._started = False
        self._instance = None
        self.places = Places.for_user(config_dir=app.config.paths.config_dir)
        """Where the launcher and this profile's autostart entry go (tests point it at a folder of theirs)."""
        self._start_at_login = app.keeper.settings.ui.start_at_login
        self.compact: CompactWindow | None = None
        """The small face, made the first time she goes compact."""
        self.compact_action = QAction("Compact face", self, checkable=True)
        self.compact_action.setToolTip("Only her face, small and on top of other windows")
        self.compact_action.toggled.connect(self.set_compact)
        window = app.window
        window.menu_button.menu().insertAction(window.on_top_action, self.compact_action)
        app.tray.menu.insertAction(app.tray.mute_action, self.compact_action)
        # The tray's "Show window" while she is the small face means: the full window, not both.
        app.tray.show_action.triggered.connect(
            lambda: self.compact_action.isChecked() and app.window.isVisible() and self.set_compact(False))
        self._shortcuts: list[QShortcut] = []
        self._bind_compact_key(window)
        self.caption = CompactCaption(window, app.bridge, self._caption, self)
        """What the small face's caption says (her words, else the pill)."""
        self._compositor_check = QTimer(self)
        self._compositor_check.setInterval(COMPOSITOR_CHECK_MS)
        self._compositor_check.timeout.connect(self._look_for_compositor)
        app.keeper.changed.connect(self._settings_changed)

    def start(self, environ: dict[str, str] | None = None) -> asyncio.Task:
        """Take the global push-to-talk key (the real app does; tests that want it call this,
        with the `environ` of a private bus or X server)."""
        if environ is not None:
            self.global_keys.environ = environ
            self.compact_key.environ = environ
        self._started = True
        if self.app.keeper.settings.ui.compact:
            self.set_compact(True)  # she was the small face when she quit
        return self.app.tasks.spawn(self._apply_keys(self.app.keeper.settings))

    async def _apply_keys(self, settings: Settings) -> str:
        ui = settings.ui
        status = await self.global_keys.apply(ui.push_to_talk_key, ui.global_push_to_talk)
        # The same switch: with global keys off, the compact key works in her windows only.
        await self.compact_key.apply(ui.compact_shortcut, ui.global_push_to_talk)
        return status

    def _settings_changed(self, settings: Settings) -> None:
        if self._started:
            self.app.tasks.spawn(self._apply_keys(settings))
        for shortcut in self._shortcuts:
            shortcut.setKey(QKeySequence(settings.ui.compact_shortcut))
        if settings.ui.start_at_login != self._start_at_login:
            self._start_at_login = settings.ui.start_at_login
            refusal = self.launcher_refusal() if settings.ui.start_at_login else None
            try:
                if refusal:  # an entry that runs something else at every login is never written
                    self.app.window.banners.show_banner("autostart", refusal, kind="warning")
                else:
                    set_autostart(self.places, self._launch_command(), settings.ui.start_at_login)
            except OSError as exc:
                self.app.window.banners.show_banner(
                    "autostart", f"I couldn't change starting at login: {exc.strerror or exc} ({exc.filename}).",
                    kind="warning")
        if settings.ui.compact != self.compact_action.isChecked():
            self.set_compact(settings.ui.compact)  # Settings → Desktop

    def launcher_refusal(self) -> str | None:
        """Why no launcher (or autostart entry) can be written for this profile, or None."""
        return launcher_refusal(self._launch_command())

    def _launch_command(self) -> list[str]:
        config_dir = self.app.config.paths.config_dir
        return launch_command(None if config_dir == default_config_dir() else config_dir)

    # --- one instance ---------------------------------------------------------------------
    def take_handovers(self, instance) -> None:
        """A second launch (ui.desktop.single_instance) shows her instead of opening another window."""
        self._instance = instance
        instance.raise_requested.connect(self.show_her)
        instance.listen()  # after her window is up and Ctrl-C / SIGTERM quit her properly

    def show_her(self) -> None:
        """Bring her forward as she is: the small face, or the full window."""
        target = self.compact if self.compact_action.isChecked() and self.compact is not None else self.app.window
        target.show()
        if target.isMinimized():
            target.showNormal()
        target.raise_()
        target.activateWindow()

    # --- the compact face -----------------------------------------------------------------
    def set_compact(self, on: bool) -> None:
        """Switch between the full window and the small always-on-top face (remembered)."""
        window = self.app.window
        if self.compact_action.isChecked() != on:
            self.compact_action.setChecked(on)  # comes back here through toggled
            return
        if on:
            # Asked afresh each time: a compositor may have started (or stopped) since.
            compact = self._compact_window(translucency_available(QGuiApplication.platformName()))
            screen = window.screen() if window.isVisible() else QGuiApplication.primaryScreen()
            compact.place(self.app.keeper.settings.ui.compact_geometry, screen)
            self._show_compact(compact)
            window.hide()
        else:
            self.caption.stop()
            self._compositor_check.stop()
            if self.compact is not None:
                self.compact.hide()
            window.show()
            window.raise_()
            window.activateWindow()
        self.app.tray.show_action.setText("Show window" if on else "Hide window")
        self._save(compact=on)

    def _show_compact(self, compact: CompactWindow) -> None:
        compact.share_face(self.app.window.face)
        if not compact.translucent:
            self.caption.note(NO_COMPOSITOR_CAPTION)
            self._compositor_check.start()
        else:
            self._compositor_check.stop()
        self.caption.start()
        compact.show()
        compact.raise_()

    def _compact_window(self, translucent: bool) -> CompactWindow:
        """The small face, made anew when see-through became possible (or impossible) since:
        a window's translucency is fixed when it is first shown."""
        old = self.compact
        if old is not None and old.translucent == translucent:
            return old
        compact = CompactWindow(translucent=translucent)
        compact.setWindowIcon(self.app.window.windowIcon())
        compact.open_requested.connect(lambda: self.set_compact(False))
        compact.quit_requested.connect(self.app.request_quit)
        compact.moved.connect(self._remember_place)
        self._bind_compact_key(compact)
        if translucent:
            self.app.window.banners.clear("compact")
        else:
            self.app.window.banners.show_banner("compact", NO_TRANSLUCENCY, kind="info")
        if old is not None:
            compact.setGeometry(old.geometry())
            self._shortcuts = [s for s in self._shortcuts if s.parent() is not old]
            old.hide()
            old.deleteLater()
        self.compact = compact
        return compact

    def _look_for_compositor(self) -> None:
        """A compositor started while she is the small face: she becomes see-through in place."""
        compact = self.compact
        if compact is None or not compact.isVisible() or compact.translucent:
            self._compositor_check.stop()
            return
        if translucency_available(QGuiApplication.platformName()):
            self._show_compact(self._compact_window(True))

    def _bind_compact_key(self, widget) -> None:
        """The compact-mode key, while `widget` (her window or the small face) has focus."""
        shortcut = QShortcut(QKeySequence(self.app.keeper.settings.ui.compact_shortcut), widget)
        shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
        shortcut.activated.connect(self.compact_action.toggle)
        self._shortcuts.append(shortcut)

    def _caption(self, text: str) -> None:
        if self.compact is not None:
            self.compact.set_caption(text)

    def _remember_place(self, screen: str, rect: str) -> None:
        places = dict(self.app.keeper.settings.ui.compact_geometry)
        if places.get(screen) != rect:
            places[screen] = rect
            self._save(compact_geometry=places)

    def _save(self, **ui) -> None:
        settings = self.app.keeper.settings
        if all(getattr(settings.ui, name) == value for name, value in ui.items()):
            return
        self.app._save(replace(settings, ui=replace(settings.ui, **ui)))

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
        self.compact_key.close()
        if self._instance is not None:
            self._instance.close()
        self.caption.stop()
        self._compositor_check.stop()
        if self.compact is not None:
            self.compact.hide()
