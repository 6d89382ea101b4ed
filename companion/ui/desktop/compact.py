"""The compact face: a small frameless, always-on-top window with only her face and one line of caption.

It shares the big face's animator, so it shows the same expression, state and lip sync. Where
the desktop composites, the window is see-through and shaped: its mask is her face's own opaque
pixels plus the caption, so clicks on the see-through parts reach the windows below. A click
opens the full window; a drag moves her (the place is kept per screen); the wheel resizes her
within the screen. The caption holds up to three lines; a longer text shows its end (what she
says now), the whole of it in the tooltip.
"""

from __future__ import annotations

import os
from dataclasses import replace

from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QBitmap,
    QColor,
    QContextMenuEvent,
    QFontMetrics,
    QGuiApplication,
    QImage,
    QMouseEvent,
    QPainter,
    QPixmap,
    QRegion,
    QResizeEvent,
    QScreen,
    QWheelEvent,
)
from PySide6.QtWidgets import QLabel, QMenu, QWidget

from companion.ui.face.animation import BOB, SWAY_DEG
from companion.ui.face.painter import paint_face
from companion.ui.face.widget import FaceWidget

DEFAULT_WIDTH = 200
SIZES = (120, 520)
"""The smallest and largest face, in pixels."""
SETTLE_MS = 400
"""A place is saved this long after she was last moved or resized."""
DRAG_THRESHOLD = 6
"""Pixels the pointer moves before a press becomes a drag (less is a click)."""
CAPTION_LINES = 3
"""The caption's most lines; what she says beyond them shows in its tooltip."""
CAPTION_GAP = 2
"""Pixels between her face and the caption."""
CAPTION_PADDING = (8, 2)
"""The caption's inner padding, horizontal and vertical (its style sheet says the same)."""
ENVELOPE_FRAMES, ENVELOPE_STEP_S, ENVELOPE_GRACE_PX = 24, 0.125, 2
"""Frames painted for her mask, this far apart in her life (~3 s, a cycle of the slowest
decoration, the Zz, with the tears' and sparkles' quicker ones inside it), and the pixels of
grace around their paint."""
NO_TRANSLUCENCY = ("This desktop can't show see-through windows (no compositor is running), so her "
                   "small face sits on a square backdrop and clicks next to her don't pass through. "
                   "Start a compositor (e.g. picom or xcompmgr) for the see-through face.")


class CompactFace(FaceWidget):
    """Her face on a see-through background (the big one paints a backdrop)."""

    def __init__(self, parent: QWidget | None = None, *, translucent: bool = True) -> None:
        super().__init__(parent)
        self.translucent = translucent
        self.setMinimumSize(SIZES[0], SIZES[0])
        if translucent:
            self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, False)
            self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)

    def sizeHint(self) -> QSize:
        return QSize(DEFAULT_WIDTH, DEFAULT_WIDTH)

    def _paint_background(self) -> QPixmap:
        if not self.translucent:
            return super()._paint_background()
        pixmap = QPixmap(self.size())
        pixmap.fill(Qt.GlobalColor.transparent)
        return pixmap

    def look(self) -> tuple:
        """What decides where she can have paint: her state, character and the expression she
        is settling to (a change of one calls for a new mask)."""
        frame = self.last_frame
        if frame is None:
            return ()
        shape = frame.settling[1] if frame.settling is not None else frame.shape
        return frame.state, frame.character.name, shape

    def opaque_region(self) -> QRegion:
        """Everywhere her face can have paint in its current look, in this widget's coordinates.

        One frame's paint left out what moves: the Zz drifting up while she dozes, a horn tip
        swaying, the mouth wide open, the listening ring swelling. So the frames of a few seconds
        of her life (each decoration's cycle, the sway and the breath at their extremes, mouth and
        ring at their widest) are painted over each other, and every pixel with any paint is in:
        a soft edge pixel cut off by a threshold showed the desktop's colour as a fringe."""
        image = QImage(self.size(), QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(QColor(0, 0, 0, 0))
        painter = QPainter(image)
        frame = self.last_frame or self.animator.frame(self._clock())
        if frame.settling is not None:
            frame = replace(frame, shape=frame.settling[1], settling=None)
        for step in range(ENVELOPE_FRAMES):
            tilt = 1 if step % 2 else -1
            breath = 1 if step % 4 < 2 else -1
            level = float(step // 4 % 2)  # mouth and ring at rest and at their widest
            paint_face(painter, QRectF(self.rect()), replace(
                frame, phase=step * ENVELOPE_STEP_S, sway=tilt * SWAY_DEG, bob=breath * BOB, blink=0.0,
                speech_level=level, listen_level=level), background=False)
        painter.end()
        # Pixels equal to the untouched transparent fill are out, any paint is in (MaskInColor
        # marks the matching pixels white, which a QBitmap reads as outside the region).
        mask = image.createMaskFromColor(QColor(0, 0, 0, 0).rgba(), Qt.MaskMode.MaskInColor)
        region = QRegion(QBitmap.fromImage(mask))
        for _ in range(ENVELOPE_GRACE_PX):  # what drifts between two of those frames
            region = region.united(region.translated(1, 0)).united(region.translated(-1, 0)) \
                .united(region.translated(0, 1)).united(region.translated(0, -1))
        return region


class CompactWindow(QWidget):
    open_requested = Signal()
    """A click on her (not a drag): show the full window."""
    moved = Signal(str, str)
    """Screen name, "x,y,width,height": where she was put (saved per screen)."""
    quit_requested = Signal()

    def __init__(self, *, translucent: bool = True, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Companion")
        self.setWindowFlags(Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint
                            | Qt.WindowType.WindowStaysOnTopHint)
        self.translucent = translucent
        if translucent:
            self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)
        else:
            self.setAutoFillBackground(True)
        self.face = CompactFace(self, translucent=translucent)
        self.face.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)  # the window drags
        self.caption = QLabel(self)
        self.caption.setObjectName("compactCaption")
        self.caption.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.caption.setTextFormat(Qt.TextFormat.PlainText)
        self.caption.setWordWrap(True)
        self.caption.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        across, down = CAPTION_PADDING
        self.caption.setStyleSheet("QLabel#compactCaption { background: rgba(24, 20, 40, 215); color: #f3eefe;"
                                   f" border-radius: 8px; padding: {down}px {across}px; }}")
        self._caption_text = ""
        self._masked_look: tuple = ()
        self.face.painted.connect(lambda _now: self._painted())
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self._report_place)
        self._press: QPoint | None = None
        self._dragging = False
        self.menu = QMenu(self)
        self.menu.addAction("Open the full window", self.open_requested.emit)
        self.menu.addAction("Bigger", lambda: self.resize_face(1.25))
        self.menu.addAction("Smaller", lambda: self.resize_face(0.8))
        self.menu.addSeparator()
        self.menu.addAction("Quit", self.quit_requested.emit)
        self.setToolTip("Click to open her window; drag to move; scroll to resize")
        self.resize(self.size_for(DEFAULT_WIDTH))
        self.set_caption("")

    # --- what she shows -------------------------------------------------------------------
    def share_face(self, face: FaceWidget) -> None:
        """Show what `face` shows (one animator: the same expression, state and lip sync)."""
        self.face.animator = face.animator
        self.update_mask()

    def _painted(self) -> None:
        if self.face.look() != self._masked_look:
            self.update_mask()  # dozing, another expression or character: her outline changed

    @property
    def caption_text(self) -> str:
        """The whole caption (what the label shows may be only its end)."""
        return self._caption_text

    def set_caption(self, text: str) -> None:
        """What she says now, or her state: up to three lines under her face."""
        self._caption_text = " ".join(text.split())
        self._show_caption()

    def _show_caption(self) -> None:
        self.caption.ensurePolished()  # the style sheet's font, not the default one
        width = self.width()
        text = fit_tail(self._caption_text, QFontMetrics(self.caption.font()), width - 2 * CAPTION_PADDING[0] - 4)
        self.caption.setText(text)
        self.caption.setToolTip(self._caption_text)
        height = min(self._caption_height(), self.caption.heightForWidth(width))
        self.caption.setGeometry(0, width + CAPTION_GAP, width, max(height, 0))
        self.caption.setVisible(bool(self._caption_text))
        self.update_mask()

    def update_mask(self) -> None:
        """Input (and, where composited, drawing) only where she is: her face and the caption."""
        if not self.translucent:
            self.clearMask()
            return
        self._masked_look = self.face.look()
        region = self.face.opaque_region().translated(self.face.pos())
        if self.caption.isVisible() and self._caption_text:
            region = region.united(QRegion(self.caption.geometry()))
        self.setMask(region)

    # --- size and place -------------------------------------------------------------------
    def _caption_height(self) -> int:
        self.caption.ensurePolished()
        return QFontMetrics(self.caption.font()).lineSpacing() * CAPTION_LINES + 2 * CAPTION_PADDING[1] + 2

    def size_for(self, width: int) -> QSize:
        """Her window's size for a face `width` pixels wide: the face, and the caption's three lines."""
        return QSize(width, width + CAPTION_GAP + self._caption_height())

    def _largest(self, area: QRect) -> int:
        """The widest face that fits `area` with its caption."""
        return max(SIZES[0], min(SIZES[1], area.width(), area.height() - self.size_for(0).height()))

    def resize_face(self, factor: float) -> None:
        """Bigger or smaller about her middle, always whole on her screen."""
        area = self._area()
        width = round(min(self._largest(area), max(SIZES[0], self.width() * factor)))
        rect = QRect(QPoint(0, 0), self.size_for(width))
        rect.moveCenter(self.geometry().center())
        self.setGeometry(_inside(rect, area))
        self._settle.start()

    def _area(self) -> QRect:
        screen = QGuiApplication.screenAt(self.geometry().center()) or self.screen()
        return (screen or QGuiApplication.primaryScreen()).availableGeometry()

    def place(self, saved: dict[str, str], screen: QScreen | None = None) -> None:
        """Where she was on this screen, or its bottom-right corner the first time."""
        screen = screen or QGuiApplication.primaryScreen()
        area = screen.availableGeometry()
        rect = _parse_rect(saved.get(screen.name(), ""))
        if rect is None or not area.intersects(rect):
            size = self.size_for(DEFAULT_WIDTH)
            rect = QRect(area.right() - size.width() - 24, area.bottom() - size.height() - 24,
                         size.width(), size.height())
        # Her size follows from the face's width (a place saved by an older version may differ).
        rect.setSize(self.size_for(min(rect.width(), self._largest(area))))
        self.setGeometry(_inside(rect, area))

    def _report_place(self) -> None:
        if not self.isVisible():
            return
        screen = QGuiApplication.screenAt(self.geometry().center()) or self.screen()
        g = self.geometry()
        self.moved.emit(screen.name(), f"{g.x()},{g.y()},{g.width()},{g.height()}")

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self.face.setGeometry(0, 0, self.width(), self.width())
        self._show_caption()

    # --- the pointer ----------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.globalPosition().toPoint()
            self._origin = self.pos()
            self._dragging = False

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if self._press is None:
            return
        delta = event.globalPosition().toPoint() - self._press
        if not self._dragging and delta.manhattanLength() >= DRAG_THRESHOLD:
            self._dragging = True
            handle = self.windowHandle()
            # The window manager moves her where it can (Wayland allows nothing else).
            if handle is not None and os.environ.get("QT_QPA_PLATFORM") != "offscreen" and handle.startSystemMove():
                self._press = None
                return
        if self._dragging:
            self.move(self._origin + delta)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.button() != Qt.MouseButton.LeftButton:
            return
        pressed, was_drag = self._press is not None, self._dragging
        self._press, self._dragging = None, False
        if pressed and not was_drag:
            self.open_requested.emit()

    def moveEvent(self, event) -> None:  # noqa: N802
        super().moveEvent(event)
        if self.isVisible():
            self._settle.start()  # saved once she stops moving (a drag moves her many times)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        steps = event.angleDelta().y() / 120
        if steps:
            self.resize_face(1.1 ** steps)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802
        self.menu.popup(event.globalPos())


def fit_tail(text: str, metrics: QFontMetrics, width: int, lines: int = CAPTION_LINES) -> str:
    """`text` if it wraps into `lines` lines of `width` pixels, else its end after "…"."""
    room = QRect(0, 0, width, 1 << 20)
    most = metrics.boundingRect(room, 0, "\n".join("x" * lines)).height()

    def fits(candidate: str) -> bool:
        bound = metrics.boundingRect(room, Qt.TextFlag.TextWordWrap, candidate)
        return bound.height() <= most and bound.width() <= width

    words = text.split(" ")
    if fits(text) or not text:
        return text
    if len(words) == 1:
        return metrics.elidedText(text, Qt.TextElideMode.ElideLeft, width)
    low, high = 1, len(words) - 1  # the fewest words to drop; dropping all but the last is the most
    while low < high:
        middle = (low + high) // 2
        if fits("…" + " ".join(words[middle:])):
            high = middle
        else:
            low = middle + 1
    tail = "…" + " ".join(words[low:])
    return tail if fits(tail) else metrics.elidedText(words[-1], Qt.TextElideMode.ElideLeft, width)


def _inside(rect: QRect, area: QRect) -> QRect:
    """`rect` moved (not resized) so that it lies within `area` where it can."""
    x = max(area.left(), min(rect.x(), area.right() + 1 - rect.width()))
    y = max(area.top(), min(rect.y(), area.bottom() + 1 - rect.height()))
    return QRect(x, y, rect.width(), rect.height())


def _parse_rect(text: str) -> QRect | None:
    try:
        x, y, w, h = (int(part) for part in text.split(","))
    except ValueError:
        return None
    if not (SIZES[0] <= w <= SIZES[1] + 200 and h > 0):
        return None
    return QRect(x, y, w, h)


def translucency_available(platform: str, display: str | None = None) -> bool:
    """Can this desktop show see-through windows? On X11 only with a compositing manager."""
    if platform != "xcb":
        return True  # Wayland composites always; offscreen draws into images with alpha
    try:
        from Xlib import X
        from Xlib import display as xdisplay

        conn = xdisplay.Display(display)
    except Exception:  # no python-xlib or no display: Qt decides alone
        return False
    try:
        owner = conn.get_selection_owner(conn.intern_atom(f"_NET_WM_CM_S{conn.get_default_screen()}"))
        return owner != X.NONE
    finally:
        conn.close()
