"""Her replies' markdown as rich text: Qt's own md4c-based reader, then code set in monospace.

`render_markdown(text)` gives a QTextDocument to insert into the transcript, and the text of
each code block (for its Copy link). Raw HTML in a reply is shown as text, never run as markup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)

CODE_BACKGROUND = QColor("#ece3f2")
LINK = QColor("#5a3fc0")
COPY_SCHEME = "copy"
"""Links `copy:N` copy code block N of the transcript."""

_FEATURES = (QTextDocument.MarkdownFeature.MarkdownDialectGitHub
             | QTextDocument.MarkdownFeature.MarkdownNoHTML)


@dataclass
class Rendered:
    document: QTextDocument
    code_blocks: list[str]


def code_spans(text: str) -> list[tuple[str, bool]]:
    """`text` cut at its backticks: (piece, is_code) in order, the backticks themselves gone
    (an unpaired backtick stays as it is)."""
    pieces = text.split("`")
    if len(pieces) % 2 == 0:  # an odd number of backticks: the last one is plain text
        pieces[-2:] = [pieces[-2] + "`" + pieces[-1]]
    return [(piece, n % 2 == 1) for n, piece in enumerate(pieces) if piece]


_BLOCK_START = re.compile(r"^\s*([-*+>#|]|\d+[.)]\s|```|~~~)")
"""A line that starts a markdown block of its own (list, quote, heading, table, fence)."""


def keep_line_breaks(text: str) -> str:
    """Single newlines in a reply stay line breaks (markdown would join the lines into one
    paragraph); code fences, tables and lines starting a block are left alone."""
    lines = text.split("\n")
    fenced = False
    for n, line in enumerate(lines[:-1]):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        following = lines[n + 1]
        if fenced or not line.strip() or not following.strip() or "|" in line \
                or _BLOCK_START.match(following) or line.endswith(("  ", "\\")):
            continue
        lines[n] = line + "  "  # markdown's hard line break
    return "\n".join(lines)


def code_font() -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    return font


def render_markdown(text: str, *, first_code_id: int = 0, color: QColor | None = None) -> Rendered:
    """Markdown to a document: paragraphs, lists, bold/italic, links, inline code, code blocks.

    Each code block gets a "Copy" link after it, `copy:<first_code_id + n>`. `color` is the
    text colour (links keep theirs).
    """
    document = QTextDocument()
    document.setMarkdown(keep_line_breaks(text), _FEATURES)
    mono = code_font()
    codes: list[str] = []
    ends: list[int] = []
    block = document.begin()
    while block.isValid():
        if _is_code(block):
            # One code block is a run of consecutive code lines.
            lines, last = [], block
            while block.isValid() and _is_code(block):
                _style_code_block(block, mono, color)
                lines.append(block.text())
                last, block = block, block.next()
            codes.append("\n".join(lines))
            ends.append(last.blockNumber())
            continue
        _style_inline(block, mono, color)
        block = block.next()
    # Links go in last to first: inserting a block renumbers the ones after it.
    for index in range(len(ends) - 1, -1, -1):
        _add_copy_link(document.findBlockByNumber(ends[index]), first_code_id + index)
    return Rendered(document, codes)


def _is_code(block) -> bool:
    return block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence) or _indented_code(block)


def _indented_code(block) -> bool:
    # An indented (not fenced) code block has no fence property, only a fixed-pitch font.
    return block.blockFormat().nonBreakableLines() and block.charFormat().fontFixedPitch()


def _style_code_block(block, mono: QFont, color: QColor | None) -> None:
    cursor = QTextCursor(block)
    fmt = QTextBlockFormat(block.blockFormat())
    fmt.setBackground(CODE_BACKGROUND)
    fmt.setLeftMargin(4)
    # The reader marks code lines unbreakable: a long one ran past the bubble, cut off (the
    # transcript never scrolls sideways). Wrapped, every character stays in sight; Copy copies
    # the lines as they were.
    fmt.setNonBreakableLines(False)
    cursor.setBlockFormat(fmt)
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
    char = QTextCharFormat()
    char.setFont(mono, QTextCharFormat.FontPropertiesInheritanceBehavior.FontPropertiesSpecifiedOnly)
    char.setFontFamilies([mono.family()])
    if color is not None:
        char.setForeground(color)
    cursor.mergeCharFormat(char)


def _style_inline(block, mono: QFont, color: QColor | None) -> None:
    """Inline code (fixed pitch from the reader) in the real monospace font; links coloured."""
    iterator = block.begin()
    while not iterator.atEnd():
        fragment = iterator.fragment()
        fmt = fragment.charFormat()
        change = QTextCharFormat()
        if fmt.fontFixedPitch() or "monospace" in (fmt.fontFamilies() or []):
            change.setFontFamilies([mono.family()])
            change.setBackground(CODE_BACKGROUND)
        if fmt.isAnchor():
            change.setForeground(LINK)
            change.setFontUnderline(True)
            change.setToolTip(fmt.anchorHref())
        elif color is not None:
            change.setForeground(color)
        if change.properties():
            cursor = QTextCursor(block.document())
            cursor.setPosition(fragment.position())
            cursor.setPosition(fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(change)
        iterator += 1


def _add_copy_link(block, code_id: int) -> None:
    cursor = QTextCursor(block)
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    fmt = QTextBlockFormat()
    fmt.setAlignment(block.blockFormat().alignment())
    cursor.insertBlock(fmt, QTextCharFormat())
    link = QTextCharFormat()
    link.setAnchor(True)
    link.setAnchorHref(f"{COPY_SCHEME}:{code_id}")
    link.setForeground(LINK)
    link.setFontPointSize(8.5)
    link.setToolTip("Copy this code")
    cursor.insertText("Copy", link)
