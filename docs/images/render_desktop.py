"""Re-render the README and docs/ pictures of her desktop presence from the real widgets: the
compact face over a desktop, the launcher as an applications menu lists it (with the icon files
install-desktop writes), and Settings → Voice → Push-to-talk and shortcuts.

    .venv/bin/python docs/images/render_desktop.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))


def _desktop(width: int, height: int):
    """A plain desktop with another app's window on it, to show what she sits on top of."""
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QImage, QLinearGradient, QPainter

    image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    gradient = QLinearGradient(0, 0, width, height)
    gradient.setColorAt(0, QColor("#3d5a80"))
    gradient.setColorAt(1, QColor("#98c1d9"))
    painter.fillRect(image.rect(), gradient)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor("#fdfdfd"))
    painter.setPen(QColor("#c8ccd4"))
    painter.drawRoundedRect(QRectF(40, 40, width - 200, height - 120), 8, 8)
    painter.fillRect(QRectF(41, 41, width - 202, 30), QColor("#e6e8ee"))
    font = QFont("monospace")
    font.setPixelSize(15)
    painter.setFont(font)
    painter.setPen(QColor("#333"))
    for line, text in enumerate(("def schedule(day):", "    meetings = load(day)", "    return sorted(meetings)",
                                 "", "# notes.py — your editor keeps the keyboard;", "# hold F9 anywhere to talk")):
        painter.drawText(QRectF(60, 90 + line * 24, width - 240, 24), Qt.AlignmentFlag.AlignLeft, text)
    painter.end()
    return image


def compact_shot() -> None:
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QPainter
    from PySide6.QtWidgets import QApplication

    from companion.ui.desktop.compact import CompactWindow
    from companion.ui.face.widget import FaceWidget

    app = QApplication.instance() or QApplication([])
    big = FaceWidget()
    big.animator.set_expression("happy", 0.0)
    compact = CompactWindow()
    compact.share_face(big)
    compact.resize(compact.size_for(220))
    compact.set_caption("Sam is at three today, and your dentist moved to Friday morning.")
    compact.show()
    for _ in range(20):
        app.processEvents()
    desktop = _desktop(900, 560)
    painter = QPainter(desktop)
    painter.drawPixmap(QPoint(900 - 20 - compact.width(), 560 - 20 - compact.height()), compact.grab())
    painter.end()
    desktop.save(str(HERE / "compact.png"))
    compact.close()


def launcher_shot() -> None:
    """How an applications menu lists her, drawn from the entry and icons install-desktop writes."""
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QImage, QPainter

    from companion import desktop_entry
    from companion.ui.face.pictures import save_icon_png

    with tempfile.TemporaryDirectory() as home:
        places = desktop_entry.Places.for_user({"HOME": home})
        desktop_entry.install(places, ["companion"], lambda size, path: save_icon_png(size, path))
        entry = dict(line.split("=", 1) for line in places.entry.read_text().splitlines() if "=" in line)
        icons = [(size, QImage(str(places.icon(size)))) for size in (16, 24, 32, 48, 64, 128)]
    width, height = 760, 330
    image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor("#2b2f3a"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor("#3a4050"))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawRoundedRect(QRectF(20, 20, width - 40, 96), 10, 10)
    painter.drawImage(QRectF(36, 36, 64, 64), icons[4][1])
    title = QFont()
    title.setPixelSize(22)
    title.setBold(True)
    painter.setFont(title)
    painter.setPen(QColor("#f2f2f7"))
    painter.drawText(QRectF(116, 34, width - 160, 30), Qt.AlignmentFlag.AlignLeft, entry["Name"])
    body = QFont()
    body.setPixelSize(15)
    painter.setFont(body)
    painter.setPen(QColor("#c9cbd6"))
    painter.drawText(QRectF(116, 66, width - 160, 40), Qt.AlignmentFlag.AlignLeft,
                     f"{entry['GenericName']} — {entry['Comment']}")
    x = 36
    for size, icon in icons:
        painter.drawImage(QRectF(x, 286 - size, size, size), icon)
        painter.drawText(QRectF(x - 10, 292, size + 20, 20), Qt.AlignmentFlag.AlignCenter, f"{size}")
        x += size + 40
    painter.end()
    image.save(str(HERE / "launcher.png"))


def shortcuts_shot() -> None:
    from PySide6.QtWidgets import QApplication

    from companion.config import Paths, Settings
    from companion.tools.registry import Registry
    from companion.ui.settings.dialog import SettingsDialog
    from companion.ui.settings.keeper import SettingsKeeper

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as folder:
        keeper = SettingsKeeper(Paths.default(Path(folder)), Settings())
        dialog = SettingsDialog(keeper, Registry())
        dialog.resize(640, 760)
        dialog.tabs.setCurrentWidget(dialog.voice)
        dialog.voice.shortcuts.set_status("from any window (desktop portal)")
        dialog.show()
        rows = dialog.voice.shortcuts.status.parentWidget()
        for _ in range(10):
            app.processEvents()
        rows.grab().save(str(HERE / "settings-shortcuts.png"))
        dialog.reject()


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from companion.ui.theme import apply_theme

    app = QApplication.instance() or QApplication([])
    apply_theme(app)
    compact_shot()
    launcher_shot()
    shortcuts_shot()
    return 0


if __name__ == "__main__":
    sys.exit(main())
