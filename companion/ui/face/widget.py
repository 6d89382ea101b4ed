"""Her face as a widget that repaints at display rate, and an offscreen renderer for PNGs."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QRect, QRectF, QSize, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QImage, QPainter, QPaintEvent, QPixmap
from PySide6.QtWidgets import QSizePolicy, QWidget

from companion.events import HoldingChanged, State, StateChanged, VoiceIgnored
from companion.ui.face.animation import FAST_MS, STILL_MS, FaceAnimator
from companion.ui.face.character import Character, character_for
from companion.ui.face.expressions import shape_for
from companion.ui.face.extras import RingCache
from companion.ui.face.frame import FaceFrame
from companion.ui.face.layers import LayerCache
from companion.ui.face.painter import face_bounds, paint_background, paint_face

FRAME_INTERVAL_MS = FAST_MS
IDLE_FRAME_INTERVAL_MS = STILL_MS
"""While she only sways gently (idle, no change under way) 10 fps looks the same."""


class FaceWidget(QWidget):
    """Paints the animator's current frame every ~16 ms while visible.

    While she moves at the full rate, each frame is drawn ahead, right after the previous
    one is shown, for the moment it will be shown: a tick only copies it to the screen, so
    frames reach the screen on the timer's beat however long drawing one takes (an
    expression change draws more than a still face; frame-interval p99 follows the slowest
    draws otherwise). The animation is a function of time, so a frame drawn ahead is the
    same frame drawn late; a change asked for in between shows from the next frame on.
    """

    painted = Signal(float)
    """After each frame, with the clock time it showed (for start-up and frame-pacing benches)."""

    def __init__(self, parent: QWidget | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(parent)
        self._clock = clock
        self.animator = FaceAnimator(clock())
        self.setMinimumSize(160, 160)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # we paint every pixel
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(FRAME_INTERVAL_MS)
        self._timer.timeout.connect(self._next_frame)
        self.last_frame: FaceFrame | None = None
        self.frames = 0
        """Frames painted so far (benches and tests count them)."""
        self._layer_cache = LayerCache()
        self._ring_cache = RingCache()
        self._background: QPixmap | None = None
        self._watched: QWidget | None = None
        self._tick_at = clock()
        self._ahead: _Ahead | None = None
        self._spare: QImage | None = None
        self.frames_ahead = 0
        """Frames that were drawn ahead and only copied when shown (tests count them)."""

    def sizeHint(self) -> QSize:
        return QSize(360, 360)

    @property
    def expression(self) -> str:
        return self.animator.expression

    @Slot(str)
    def set_expression(self, name: str) -> None:
        self.animator.set_expression(name, self._clock())
        self._pace(FRAME_INTERVAL_MS)

    @property
    def character(self) -> Character:
        return self.animator.character

    def set_character(self, character: Character | str) -> None:
        """Draw her as another character (a name from the personality's `face:`, or a Character)."""
        chosen = character_for(character) if isinstance(character, str) else character
        if chosen != self.animator.character:
            self.animator.character = chosen
            self.update()

    @Slot(str)
    def set_state(self, state: str) -> None:
        self.animator.set_state(state)
        self._pace(FRAME_INTERVAL_MS)

    @Slot(bool)
    def set_holding(self, holding: bool) -> None:
        """She waits for the rest of an open sentence: the attentive look and nod (holding.py)."""
        self.animator.set_holding(holding)
        self._pace(FRAME_INTERVAL_MS)

    def follow_holds(self, bridge) -> None:
        """Show the core's holds for open words and her "not you" look when a voice is ignored
        (`bridge`: ui.bridge.EventBridge, whose `event` signal carries every core event on the
        Qt thread)."""
        bridge.event.connect(self._on_core_event)

    @Slot(object)
    def _on_core_event(self, event: object) -> None:
        match event:
            case HoldingChanged(holding=holding):
                self.set_holding(holding)
            case VoiceIgnored():
                self.animator.not_you(self._clock())
                self._pace(FRAME_INTERVAL_MS)
            case StateChanged(state=state) if state != State.LISTENING and self.animator.holding:
                self.set_holding(False)  # her turn began: whatever held her is over

    @Slot(float)
    def set_speech_level(self, level: float) -> None:
        self.animator.set_speech_level(level)
        if level > 0.01:
            self._pace(FRAME_INTERVAL_MS)

    @Slot(float)
    def set_listen_level(self, level: float) -> None:
        self.animator.set_listen_level(level)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt name)
        top = self.window()
        if top is not self and top is not self._watched:
            top.installEventFilter(self)  # to hear when the window is minimised
            self._watched = top
        if not top.isMinimized():
            self._timer.start()
        super().showEvent(event)

    def hideEvent(self, event) -> None:  # noqa: N802
        self._timer.stop()  # a hidden face costs nothing
        super().hideEvent(event)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is self._watched and event.type() == QEvent.Type.WindowStateChange:
            if watched.isMinimized():
                self._timer.stop()  # minimised: nobody sees her, so nothing is drawn
            elif self.isVisible():
                self._timer.start()
        return False

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        now = self._clock()
        # Painting allocates enough to trigger the cyclic collector, which could delete a
        # widget (even this window) in the middle of the paint: never collect in here.
        with _no_collection():
            painter = QPainter(self)
            if self._background is None or self._background.size() != self.size():
                self._background = self._paint_background()
                self._ahead = None
            ahead, self._ahead = self._ahead_for(now), None
            if ahead is None or not ahead.bounds.contains(event.rect()):
                painter.drawPixmap(event.rect(), self._background, event.rect())
            if ahead is None:
                frame = self.animator.frame(now)
                paint_face(painter, QRectF(self.rect()), frame, background=False,
                           layer_cache=self._layer_cache, ring_cache=self._ring_cache)
            else:
                frame = ahead.frame
                painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_Source)
                painter.drawImage(ahead.bounds.topLeft(), ahead.image)  # a copy: it holds the backdrop
                self.frames_ahead += 1
            painter.end()
        self.last_frame = frame
        interval = self.animator.frame_interval_ms(now)
        self._pace(interval)
        self.frames += 1
        self.painted.emit(now)
        if interval == FRAME_INTERVAL_MS:
            QTimer.singleShot(0, self._draw_ahead)

    def _next_frame(self) -> None:
        self._tick_at = self._clock()
        # Only the square around her face changes from frame to frame; the rest is backdrop.
        self.update(face_bounds(QRectF(self.rect())).toAlignedRect())

    def _ahead_for(self, now: float) -> _Ahead | None:
        """The frame drawn ahead, if it was drawn for about now, this size and character."""
        ahead = self._ahead
        if ahead is None or ahead.size != self.size():
            return None
        if ahead.frame.character != self.animator.character or abs(ahead.at - now) > FRAME_INTERVAL_MS / 1000:
            return None
        return ahead

    def _draw_ahead(self) -> None:
        if not self.isVisible() or self._background is None or self._timer.interval() != FRAME_INTERVAL_MS:
            return
        bounds = face_bounds(QRectF(self.rect())).toAlignedRect()
        image = self._ahead_image(bounds)
        at = self._tick_at + FRAME_INTERVAL_MS / 1000  # the next tick: when this frame will show
        frame = self.animator.frame(at)
        with _no_collection():
            painter = QPainter(image)
            painter.translate(-bounds.topLeft())
            painter.drawPixmap(bounds, self._background, bounds)
            paint_face(painter, QRectF(self.rect()), frame, background=False,
                       layer_cache=self._layer_cache, ring_cache=self._ring_cache)
            painter.end()
        self._ahead = _Ahead(frame, image, bounds, self.size(), at)

    def _ahead_image(self, bounds: QRect) -> QImage:
        # One image, drawn again each frame: the frame it held has been shown.
        ratio = self.devicePixelRatioF()
        spare = self._spare
        if spare is None or spare.size() != bounds.size() * ratio or spare.devicePixelRatio() != ratio:
            spare = QImage(bounds.size() * ratio, QImage.Format.Format_ARGB32_Premultiplied)
            spare.setDevicePixelRatio(ratio)
            self._spare = spare
        return spare

    def _paint_background(self) -> QPixmap:
        pixmap = QPixmap(self.size())
        painter = QPainter(pixmap)
        paint_background(painter, QRectF(self.rect()))
        painter.end()
        return pixmap

    def _pace(self, interval_ms: int) -> None:
        # setInterval restarts a running timer: calling it on every frame or level update
        # stretched each frame by the time it took to paint (p50 22 ms instead of 16).
        if self._timer.interval() != interval_ms:
            self._timer.setInterval(interval_ms)


@dataclass(frozen=True)
class _Ahead:
    """A frame drawn ahead: what it shows, its pixels (backdrop included), where they go."""

    frame: FaceFrame
    image: QImage
    bounds: QRect
    size: QSize
    at: float
    """The clock time it was drawn for."""


@contextmanager
def _no_collection() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def render_expression(name: str, width: int, height: int, *, phase: float = 0.6,
                      state: str = "idle", character: str = "mira", speech_level: float = 0.0) -> QImage:
    """Her face making `name` as `character`, still and eyes open, on a `width` x `height` image."""
    image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor(0, 0, 0, 0))
    painter = QPainter(image)
    paint_face(painter, QRectF(0, 0, width, height),
               FaceFrame(shape=shape_for(name), phase=phase, state=state, character=character_for(character),
                         speech_level=speech_level))
    painter.end()
    return image
