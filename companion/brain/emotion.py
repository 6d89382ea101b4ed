"""Clean a streamed reply: drop `<think>…</think>` reasoning and emotion tags, even split across chunks."""

from __future__ import annotations

import re

from companion.events import EXPRESSIONS

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
MAX_TAG_LENGTH = 16
"""Longest `[word]` we hold back waiting for `]`; anything longer is ordinary text."""
_TAG = re.compile(r"\[([A-Za-z]+)\]")
_TAG_INSIDE = re.compile(r"\[([A-Za-z]+)\] ?")


class ReplyFilter:
    """Feed raw model text with `feed()`; it returns only what may be shown and spoken.

    Reasoning blocks vanish wherever they are. The emotion tag the reply begins with is
    removed and remembered in `emotion`; a known emotion tag later in the text is removed
    too (it is stage direction, not speech). Text that might be the start of a block or a
    tag is held back until the next chunk settles it; `finish()` releases what is left.
    """

    def __init__(self) -> None:
        self.emotion: str | None = None
        self.raw = ""
        """Everything fed in, untouched (for logs)."""
        self._pending = ""
        self._in_think = False
        self._at_start = True
        self._after_tag = False
        self._visible: list[str] = []

    @property
    def text(self) -> str:
        """All visible text so far."""
        return "".join(self._visible)

    def feed(self, chunk: str) -> str:
        self.raw += chunk
        self._pending += chunk
        out = self._drain(final=False)
        self._visible.append(out)
        return out

    def finish(self) -> str:
        out = self._drain(final=True)
        self._visible.append(out)
        return out

    def _drain(self, *, final: bool) -> str:
        out: list[str] = []
        while self._pending:
            if self._in_think:
                end = self._pending.find(THINK_CLOSE)
                if end < 0:
                    # Keep only a possible partial "</think>" at the end; the rest is reasoning.
                    self._pending = "" if final else _partial_suffix(self._pending, THINK_CLOSE)
                    break
                self._pending = self._pending[end + len(THINK_CLOSE):]
                self._in_think = False
                continue
            start = self._pending.find(THINK_OPEN)
            text = self._pending if start < 0 else self._pending[:start]
            held = ""
            if start < 0 and not final:
                held = _partial_suffix(text, THINK_OPEN)
                text = text[: len(text) - len(held)]
            text, tag_held = self._tags(text, final=final and start < 0)
            out.append(text)
            if start < 0:
                self._pending = tag_held + held
                break
            out.append(tag_held)  # a "[" right before <think> is plain text
            self._pending = self._pending[start + len(THINK_OPEN):]
            self._in_think = True
        return "".join(out)

    def _tags(self, text: str, *, final: bool) -> tuple[str, str]:
        """Strip tags from `text`; returns (visible, held back for the next chunk)."""
        held = ""
        bracket = text.rfind("[")
        if not final and bracket >= 0 and "]" not in text[bracket:]:
            candidate = text[bracket + 1:]
            if len(candidate) < MAX_TAG_LENGTH and candidate.isalpha() or candidate == "":
                text, held = text[:bracket], text[bracket:]
        if self._at_start:
            stripped = text.lstrip()
            if not stripped:
                # Only whitespace so far: hold it, the tag may still come.
                return "", text + held
            match = _TAG.match(stripped)
            if match:
                word = match.group(1).lower()
                self.emotion = word if word in EXPRESSIONS else "neutral"
                text = stripped[match.end():].lstrip()
                self._after_tag = not text
            else:
                text = stripped
            self._at_start = False
        elif self._after_tag:
            # The space after a tag that ended a chunk arrives with the next one.
            text = text.lstrip()
            self._after_tag = not text
        tail = _TAG.search(text[-MAX_TAG_LENGTH - 2:] if text else "")
        if tail and tail.end() == len(text[-MAX_TAG_LENGTH - 2:]) and tail.group(1).lower() in EXPRESSIONS:
            self._after_tag = True  # a tag ended this chunk: its space comes with the next
        return _TAG_INSIDE.sub(_drop_known, text), held


def _drop_known(match: re.Match[str]) -> str:
    return "" if match.group(1).lower() in EXPRESSIONS else match.group(0)


def _partial_suffix(text: str, marker: str) -> str:
    """The longest end of `text` that is a beginning of `marker` (to hold back)."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:size]):
            return text[-size:]
    return ""


# A face for a reply that carries no tag: the first rule with the most hits wins.
_FACE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((face, re.compile(pattern, re.I)) for face, pattern in (
    ("sad", r"\b(sorry|unfortunately|i'm afraid|couldn't|can't|cannot|failed|didn't work|went wrong)\b"),
    ("excited", r"\b(amazing|awesome|fantastic|incredible|wow|yay|hooray)\b|!!"),
    ("confused", r"\b(not sure|unclear|confus\w*|don't understand|what do you mean)\b"),
    ("thinking", r"\b(hmm+|let me (?:think|check|see|look)|maybe|perhaps|i think|i wonder)\b"),
    ("surprised", r"\b(oh|whoa|really\?|surpris\w*)\b"),
    ("affectionate", r"\b(love|miss you|hugs?|proud of you)\b"),
    ("happy", r"\b(great|glad|happy|nice|done|sure|hello|hi|welcome|good|of course|here you go)\b|!"),
))


def guess_emotion(text: str) -> str:
    """The face a reply without an emotion tag suggests (a few word rules), else neutral."""
    best, hits = "neutral", 0
    for face, rule in _FACE_RULES:
        count = len(rule.findall(text))
        if count > hits:
            best, hits = face, count
    return best


def clean_reply(text: str) -> tuple[str, str]:
    """Whole-text version: (visible text, emotion; "neutral" when there is no tag)."""
    reply = ReplyFilter()
    visible = reply.feed(text) + reply.finish()
    return visible.strip(), reply.emotion or "neutral"
