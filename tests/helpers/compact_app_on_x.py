"""Her app as the compact face on a real X server, for tests/ui/desktop/test_ui_compact_x11.py.

Prints "compact T" (T: 1 when see-through) once she is the small face; after a line on stdin
(the test has started a compositor) prints "compact T" again once she is the small face anew,
or after 10 s as she is. Ends when stdin closes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ["QT_QPA_PLATFORM"] = "xcb"

from PySide6.QtCore import QSocketNotifier, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from companion.config import Paths, RunConfig, Settings, with_overrides  # noqa: E402
from companion.ui.app import CompanionApp  # noqa: E402


def main() -> None:
    app = QApplication(sys.argv[:1])
    folder = Path(tempfile.mkdtemp())
    settings = with_overrides(Settings(), brain={"base_url": "http://127.0.0.1:9/v1"},
                              tools={"workspace": str(folder / "workspace")})
    companion = CompanionApp(RunConfig(Paths.default(folder / "config"), settings), with_voice=False)
    companion.show()
    companion.desktop.set_compact(True)
    first = companion.desktop.compact
    print("compact", int(first.translucent), flush=True)
    watch = QTimer()
    watch.setInterval(50)
    deadline = [0.0]

    def changed() -> None:
        compact = companion.desktop.compact
        handle = compact.windowHandle()
        fresh = compact is not first and handle is not None and handle.isExposed()
        if fresh or time.monotonic() > deadline[0]:
            watch.stop()
            print("compact", int(compact.translucent), flush=True)

    watch.timeout.connect(changed)

    def read() -> None:
        if not os.read(sys.stdin.fileno(), 4096):
            app.quit()
        elif not watch.isActive():
            deadline[0] = time.monotonic() + 10
            watch.start()

    notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(read)
    app.exec()


if __name__ == "__main__":
    main()
