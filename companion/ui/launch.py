"""The process around her window: the QApplication, the qasync loop on the Qt thread, one
companion per user, and Ctrl-C or SIGTERM closing her as Quit does."""

from __future__ import annotations

import asyncio
import signal
import sys
import time

from PySide6.QtWidgets import QApplication


def name_the_loop() -> None:
    """Say on this thread (the Qt thread, where qasync runs asyncio) that asyncio is the async
    library. httpx and anyio ask sniffio, which finds asyncio only inside a task: cleanup run
    from a Qt callback or a garbage collection outside one raised AsyncLibraryNotFoundError,
    and Python printed its traceback on the terminal."""
    try:
        import sniffio
    except ImportError:  # nothing installed asks it
        return
    sniffio.thread_local.name = "asyncio"


def quit_on_signals(loop: asyncio.AbstractEventLoop, request_quit) -> None:
    """Ctrl-C or SIGTERM close her as the Quit menu does (settings saved, devices released).

    Python's default SIGINT handler would raise KeyboardInterrupt inside whatever Qt
    callback happens to run, which Qt reports and ignores.
    """
    def handle(_signum, _frame) -> None:
        loop.call_soon_threadsafe(request_quit)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handle)


def run_window(config, make_app, *, with_voice: bool = True) -> int:
    """Open the window that `make_app(config, with_voice=..., launched_at=...)` builds (a
    CompanionApp) and run until she is closed; 0 also when a copy already runs."""
    import qasync

    from companion.ui.desktop.single_instance import SingleInstance, server_name
    from companion.ui.face.pictures import app_icon
    from companion.ui.gc_guard import MainThreadCollector
    from companion.ui.theme import apply_theme

    launched = time.perf_counter()
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Companion")
    app.setDesktopFileName("companion")  # her launcher's name: Wayland matches the window to its icon
    instance = SingleInstance(server_name(config.paths.config_dir))
    if instance.hand_over():  # one companion per user: a second launch shows the first
        print("companion: she is already running; I asked her to show her window.", file=sys.stderr)
        return 0
    app.setWindowIcon(app_icon())
    apply_theme(app)
    app.setQuitOnLastWindowClosed(False)  # closing goes through CompanionApp.close()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    name_the_loop()
    collector = MainThreadCollector(app)  # no QObject may be collected on a worker thread

    async def main() -> None:
        companion = make_app(config, with_voice=with_voice, launched_at=launched)
        companion.window.install_push_to_talk(app)
        quit_on_signals(loop, companion.request_quit)
        companion.show()
        companion.desktop.start()
        companion.desktop.take_handovers(instance)
        await companion.start()
        await companion.closed.wait()

    with loop:
        loop.run_until_complete(main())
    collector.stop()
    return 0
