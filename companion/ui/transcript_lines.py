"""How one transcript line looks: its record, its kind's colours and character format, the
margins of its blocks, the bubble behind it, and how a tool's activity line is written."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)

from companion.ui.markdown import code_font, code_spans

STOP_SCHEME = "stop"
"""The link on a running tool's line that stops it."""

HEARD, SAID, ACTIVITY, NOTICE = "heard", "said", "activity", "notice"
BUBBLES = {HEARD: QColor("#5b5fa8"), SAID: QColor("#fff1e3")}
TEXT = {HEARD: QColor("#f3eefe"), SAID: QColor("#3a2c3f"), ACTIVITY: QColor("#cfc6f5"), NOTICE: QColor("#ffd6a0")}
SIDE_GAP = 48
"""Pixels kept free on the far side of a bubble: yours lean right, hers left."""
PAD_X, PAD_Y = 11, 7
"""Space between a bubble's edge and its text."""
LINE_GAP = 6
RADIUS = 12
OUTCOME_MARKS = {"": "⚙", "ok": "✓", "failed": "✗", "refused": "⊘", "interrupted": "⏹"}


@dataclass
class Line:
    kind: str
    text: str
    start: QTextCursor
    """At the line's first character; keeps its place when text is inserted there."""
    at: float
    spoken: bool = False
    tool: str = ""
    doing: str = ""
    outcome: str = ""
    detail: str = ""
    elapsed_s: float = 0.0
    started: float = 0.0
    """Monotonic time a running activity started."""
    wide: bool = False
    """Holds a code block: the bubble takes the full width, like the code's background."""


def shape(kind: str, blocks: list) -> None:
    """Margins that leave room for the bubble's padding and the gap on its far side."""
    for n, block in enumerate(blocks):
        fmt = QTextBlockFormat(block.blockFormat())
        if kind in BUBBLES:
            near, far = PAD_X, SIDE_GAP + PAD_X
            fmt.setLeftMargin(far if kind == HEARD else near + fmt.leftMargin())
            fmt.setRightMargin(near if kind == HEARD else far)
            if kind == HEARD:
                fmt.setAlignment(Qt.AlignmentFlag.AlignRight)
        else:
            fmt.setLeftMargin(4)
        gap = LINE_GAP + (PAD_Y if kind in BUBBLES else 0)
        if n == 0:
            fmt.setTopMargin(gap)
        if n == len(blocks) - 1:
            fmt.setBottomMargin(PAD_Y if kind in BUBBLES else 0)
        shaper = QTextCursor(block)
        shaper.setBlockFormat(fmt)
        shaper.setBlockCharFormat(char(kind))  # list bullets are drawn in the block's colour


def bubble_rect(line: Line, blocks, document: QTextDocument) -> QRectF:
    """The bubble around `line` (its `blocks`): its text's extent plus padding (document coordinates)."""
    left = top = float("inf")
    right = bottom = float("-inf")
    for block in blocks:
        layout = block.layout()
        origin = layout.position()
        for n in range(layout.lineCount()):
            rect = layout.lineAt(n).naturalTextRect().translated(origin)
            left, right = min(left, rect.left()), max(right, rect.right())
            top, bottom = min(top, rect.top()), max(bottom, rect.bottom())
    if top == float("inf"):
        return QRectF()
    margin = document.documentMargin()
    if line.kind == SAID:  # hers lean left: the text starts PAD_X in from the bubble's edge
        left = margin
        right = document.textWidth() - margin - SIDE_GAP + PAD_X if line.wide else right + 2 * PAD_X
    else:  # yours lean right: the block's right margin is the padding after the last letter
        left, right = left - PAD_X, document.textWidth() - margin
    return QRectF(left, top - PAD_Y + 1, right - left, bottom - top + 2 * PAD_Y - 2)


def fill_activity(cursor: QTextCursor, line: Line) -> None:
    """Writes a tool's line: its mark, name, what it is doing, its time, and Stop or the result."""
    plain = char(ACTIVITY)
    bold = char(ACTIVITY)
    bold.setFontWeight(QFont.Weight.DemiBold)
    cursor.insertText(f"{OUTCOME_MARKS.get(line.outcome, '•')} ", plain)
    cursor.insertText(line.tool, bold)
    if line.doing:
        cursor.insertText(f" · {line.doing}", plain)
    running = not line.outcome
    elapsed = (time.monotonic() - line.started) if running and line.started else line.elapsed_s
    if running or elapsed:
        cursor.insertText(f" · {seconds(elapsed)}", plain)
    if running:
        link = char(ACTIVITY)
        link.setAnchor(True)
        link.setAnchorHref(f"{STOP_SCHEME}:")
        link.setFontUnderline(True)
        link.setForeground(QColor("#ffb3c4"))
        cursor.insertText("  ", plain)
        cursor.insertText("Stop", link)
    elif line.detail:
        cursor.insertText(f" — {short(line.detail)}", plain)


def fill_notice(cursor: QTextCursor, kind: str, text: str) -> None:
    """A notice's text with its `code` in the code font (the backticks themselves not shown)."""
    for piece, code in code_spans(text):
        fmt = char(kind)
        if code:
            fmt.setFontFamilies([code_font().family()])
        cursor.insertText(piece, fmt)


def char(kind: str) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(TEXT.get(kind, TEXT[NOTICE]))
    if kind == ACTIVITY:
        fmt.setFontPointSize(9.0)
    return fmt


def seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 10 else f"{int(value)} s"


def short(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def when(line: Line) -> str:
    moment = datetime.fromtimestamp(line.at)
    today = datetime.now().date() == moment.date()
    return moment.strftime("%H:%M" if today else "%Y-%m-%d %H:%M")
