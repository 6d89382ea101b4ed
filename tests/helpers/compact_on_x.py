"""Shows the compact face on a real X server for tests/test_ui_compact_x11.py (Qt's xcb platform).

Prints "ready X Y WIDTH HEIGHT TRANSLUCENT" once she is on screen with her mask, then "opened"
each time a click on her asks for the full window. Ends when stdin closes.
"""

from __future__ import annotations

import os
import sys

os.environ["QT_QPA_PLATFORM"] = "xcb"

from PySide6.QtCore import QRect, QSocketNotifier, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from companion.ui.desktop.compact import CompactWindow, translucency_available  # noqa: E402
from companion.ui.face.widget import FaceWidget  # noqa: E402


def main() -> None:
    app = QApplication(sys.argv[:1])
    translucent = translucency_available("xcb")
    big = FaceWidget()
    compact = CompactWindow(translucent=translucent)
    compact.share_face(big)
    compact.open_requested.connect(lambda: print("opened", flush=True))
    compact.setGeometry(QRect(100, 100, 200, 224))
    compact.show()

    def ready() -> None:
        if compact.face.frames == 0 or not compact.windowHandle().isExposed():
            QTimer.singleShot(20, ready)
            return
        compact.update_mask()  # from a frame she has drawn
        g = compact.geometry()
        print("ready", g.x(), g.y(), g.width(), g.height(), int(translucent), flush=True)

    QTimer.singleShot(0, ready)
    # Quit when the test closes our stdin (Qt's loop watches it).
    notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(lambda: os.read(sys.stdin.fileno(), 4096) or app.quit())
    app.exec()


if __name__ == "__main__":
    main()
