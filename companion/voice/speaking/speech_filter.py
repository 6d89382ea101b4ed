"""Turning reply text into something worth hearing: no markdown, code, links, paths, emoji or tags."""

from __future__ import annotations

import re
from urllib.parse import urlparse

from companion.events import EXPRESSIONS

CODE_ON_SCREEN = "I've put the code on screen."

_FENCE = re.compile(r"```.*?(```|\Z)", re.S)
_EMOTION = re.compile(r"\[(?:" + "|".join(EXPRESSIONS) + r")\]", re.I)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^)]*)\)")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>()\"']+", re.I)
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|\b[A-Za-z]:\\(?:[\w .+-]+\\)*[\w .+-]+")
_INLINE_CODE = re.compile(r"`([^`]*)`")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*", re.M)
_QUOTE = re.compile(r"^\s*>\s?", re.M)
_BULLET = re.compile(r"^\s*[-*+•]\s+", re.M)
_RULE = re.compile(r"^\s*([-*_])\s*(\1\s*){2,}$", re.M)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$", re.M)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~)(?=\S)(.+?)(?<=\S)\1")
_HTML = re.compile(r"</?[a-zA-Z][^>]*>")
# Pictographs, dingbats, flags, skin tones, variation selectors and joiners.
_EMOJI = re.compile(
    "[\U0001F000-\U0001FAFF\U00002600-\U000027BF\U0001F1E6-\U0001F1FF\U00002B00-\U00002BFF"
    "\U0000FE0E\U0000FE0F\U0000200D\U000020E3\U0001F3FB-\U0001F3FF\U00002190-\U000021FF]"
)


def _url_stand_in(match: re.Match[str]) -> str:
    url = match.group(0).rstrip(".,;:!?")
    tail = match.group(0)[len(url):]
    host = urlparse(url if "://" in url else f"http://{url}").hostname or ""
    host = host.removeprefix("www.")
    return (f"a link to {host}" if host else "a link") + tail


def _path_stand_in(match: re.Match[str]) -> str:
    path = match.group(0).rstrip("/\\")
    name = re.split(r"[/\\]", path)[-1]
    return f"the file {name}" if "." in name.strip(".") else f"the folder {name}"


def speakable(text: str) -> str:
    """The words of `text` she should say aloud; "" when nothing is left worth saying."""
    text = _FENCE.sub(f" {CODE_ON_SCREEN} ", text)
    text = _EMOTION.sub(" ", text)
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _URL.sub(_url_stand_in, text)
    text = _INLINE_CODE.sub(lambda m: m.group(1), text)
    text = _PATH.sub(_path_stand_in, text)
    text = _HTML.sub(" ", text)
    text = _TABLE_RULE.sub(" ", text)
    text = _RULE.sub(" ", text)
    text = _HEADING.sub("", text)
    text = _QUOTE.sub("", text)
    text = _BULLET.sub("", text)
    text = _EMPHASIS.sub(lambda m: m.group(2), text)
    text = _EMOJI.sub("", text)
    text = text.replace("|", ", ").replace("#", "").replace("*", "").replace("`", "")
    # A line break without punctuation (list items, headings) becomes a sentence break.
    text = re.sub(r"(?<=\w)[ \t]*\n+\s*", ". ", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    text = re.sub(r"^[,.;:\s]+", "", text)
    return text if re.search(r"\w", text) else ""
