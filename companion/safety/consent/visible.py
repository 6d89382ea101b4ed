"""Text shown for consent made visible: control, escape, invisible and bidi characters spelled out.

A command on a card or in the terminal must look like what runs. Newlines can push the real
command out of a small box, `\\x1b[2K\\r` can erase a line on a terminal, a zero-width space
before `#` makes code look like a comment, and bidi overrides reorder what the eye reads.
Every such character is replaced by a visible escape (`\\n`, `\\x1b`, `<U+200B>`) and its
place is reported, so the window can highlight it.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from companion.safety.consent.approval import ApprovalRequest, access_sentence

__all__ = ["Visible", "hidden_note", "is_code", "make_visible", "shown_question", "terminal_text", "visible"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b", "\x00": "\\0"}
# Other (C*) and separator (Z*) categories: control, format (zero-width, bidi), surrogates,
# private use, unassigned, line and paragraph separators. A plain space is the one separator kept.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
# Invisible or blank although their category says otherwise (Hangul fillers, braille blank…).
_BLANK_LOOKING = frozenset({"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u180e"})
# Unicode's Default_Ignorable_Code_Point ranges that are marks, not format characters, so the
# categories above miss them: they draw nothing (a combining grapheme joiner before `#` made
# running code look like a comment, as a zero-width space did), and variation selectors.
_IGNORABLE_RANGES = ((0x034F, 0x034F), (0x17B4, 0x17B5), (0x180B, 0x180F), (0xFE00, 0xFE0F),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))


@dataclass(frozen=True)
class Visible:
    """`text` with every hidden character spelled out; `spans` are the [start, end) of each escape."""

    text: str
    spans: tuple[tuple[int, int], ...]

    @property
    def hidden(self) -> int:
        """How many characters were spelled out."""
        return len(self.spans)


def _escape(char: str) -> str | None:
    """The visible spelling of `char`, or None when it shows as itself."""
    if char == " ":
        return None
    if char in _NAMED:
        return _NAMED[char]
    if char in _BLANK_LOOKING or unicodedata.category(char) in _HIDDEN_CATEGORIES or \
            any(low <= ord(char) <= high for low, high in _IGNORABLE_RANGES):
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x80 else f"<U+{code:04X}>"
    return None


def make_visible(text: str, *, keep_newlines: bool = False) -> Visible:
    """`text` with control, escape, zero-width, bidi and other invisible characters spelled out.

    `keep_newlines` keeps line breaks as they are, for Python code, where a new line is the
    code's own shape rather than a second command hiding below the first one.
    """
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    for char in text:
        escape = None if keep_newlines and char == "\n" else _escape(char)
        piece = char if escape is None else escape
        if escape is not None:
            spans.append((length, length + len(piece)))
        out.append(piece)
        length += len(piece)
    return Visible("".join(out), tuple(spans))


def visible(text: str) -> str:
    """Just the spelled-out text (for the terminal and the transcript)."""
    return make_visible(text).text


_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def terminal_text(text: str) -> str:
    """`text` safe to print on a terminal: control characters (ESC, CSI, BEL, carriage
    return…) and bidi overrides spelled out, line breaks and tabs kept.

    What she says comes from the model, which repeats what a web page told it: raw, an escape
    sequence could erase lines, rewrite the question above it, or set the clipboard (OSC 52)
    to a command the user then pastes. Emoji joiners and other marks stay (they draw)."""
    out = []
    for char in text:
        if char in "\n\t" or not (unicodedata.category(char) == "Cc" or char in _BIDI_CONTROLS):
            out.append(char)
        else:
            out.append(_escape(char) or char)
    return "".join(out)


def hidden_note(count: int) -> str:
    """The sentence a card or the terminal adds when something was spelled out."""
    if count == 0:
        return ""
    what = "character" if count == 1 else "characters"
    return (f"It contains {count} invisible or control {what}, shown here as escapes "
            "(\\n, \\x1b, <U+…>): what runs is exactly this.")


def is_code(request: object) -> bool:
    """The request (an ApprovalRequest or ApprovalNeeded) is Python code, shown line by line,
    not a command line."""
    return getattr(request, "tool", "") == "execute_code"


def shown_question(request: ApprovalRequest) -> str:
    """The question as the terminal prints it: the command spelled out (no escape sequence
    reaches the terminal), why she asks, what a yes lets it touch, and why only once."""
    shown = make_visible(request.command, keep_newlines=is_code(request))
    body = shown.text.replace("\n", "\n    ")
    lines = [f"\n[approval] She wants to run ({visible(request.tool)}):", f"    {body}"]
    for extra in (hidden_note(shown.hidden), visible(request.reason),
                  access_sentence(request.access, request.network), visible(request.once_only)):
        if extra:
            lines.append(f"[approval] {extra}")
    return "\n".join(lines) + "\n"
