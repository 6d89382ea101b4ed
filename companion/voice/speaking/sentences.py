"""Splitting a streamed reply into sentences to speak, the first fragment short so it sounds soon."""

from __future__ import annotations

import re

# A sentence ends at . ! ? (or …) followed by space, or at a line break; not after "Mr." or "e.g.".
_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n\s*\n|\n(?=\s*(?:[-*+•]|\d+[.)])\s)")
_COMMA = re.compile(r"(?<=[,;:—])\s+")
_ABBREVIATIONS = frozenset({
    "mr.", "mrs.", "ms.", "dr.", "prof.", "sr.", "jr.", "st.", "vs.", "etc.", "e.g.", "i.e.",
    "approx.", "no.", "fig.", "inc.", "ltd.",
})


MIN_TAIL_WORDS = 3
"""A first sentence is cut after its first words only when at least this many follow."""


class SentenceSplitter:
    """push() streamed text, get back whole sentences; flush() at the end for the rest.

    The first piece of a reply is cut at its first comma, or after `first_max_words` words
    when no punctuation comes, so its synthesis is quick and her first sound starts sooner
    (piper makes a whole piece before its first sample: ~40 ms for "Good afternoon,", ~90 for
    six words, ~140 for a whole eight-word sentence; Jeeves and Pip on Joe's voice render up to
    10 % more audio for their pitch step). A code block is kept whole (the speech filter
    replaces it).
    """

    def __init__(self, first_cut_words: int = 1, first_max_words: int = 5) -> None:
        self.first_cut_words = first_cut_words
        self.first_max_words = first_max_words
        self._buffer = ""
        self._emitted = 0

    def push(self, text: str) -> list[str]:
        self._buffer += text
        out: list[str] = []
        while True:
            piece = self._next()
            if piece is None:
                return out
            if piece.strip():
                out.append(piece.strip())
                self._emitted += 1

    def flush(self) -> list[str]:
        rest, self._buffer = self._buffer.strip(), ""
        self._emitted = 0
        return [rest] if rest else []

    def _next(self) -> str | None:
        buffer = self._buffer
        fence = buffer.find("```")
        if fence != -1:
            close = buffer.find("```", fence + 3)
            if fence > 0 and buffer[:fence].strip():
                # Speak what came before the code, then the code block as its own piece.
                head = self._split_at(buffer[:fence], allow_tail=True)
                return head
            if close == -1:
                return None
            self._buffer = buffer[close + 3:]
            return buffer[: close + 3]
        return self._split_at(buffer, allow_tail=False)

    def _split_at(self, text: str, *, allow_tail: bool) -> str | None:
        end = self._sentence_end(text)
        if self._emitted == 0:
            first = self._first_fragment(text if end is None else text[: end[0]])
            if first is not None:
                self._buffer = self._buffer[first[1]:]
                return text[: first[0]]
        if end is not None:
            self._buffer = self._buffer[end[1]:]
            return text[: end[0]]
        if allow_tail:
            self._buffer = self._buffer[len(text):]
            return text
        return None

    @staticmethod
    def _sentence_end(text: str) -> tuple[int, int] | None:
        """(end of the first sentence, start of what follows), or None while it streams."""
        for match in _END.finditer(text):
            candidate = text[: match.start()]
            last_word = candidate.rsplit(None, 1)[-1].lower() if candidate.split() else ""
            if last_word not in _ABBREVIATIONS:
                return match.start(), match.end()
        return None

    def _first_fragment(self, sentence: str) -> tuple[int, int] | None:
        """Where to cut the first piece of a reply short: its first comma within five words, else
        after five words when at least `MIN_TAIL_WORDS` more follow (a word or two left over
        would be said as a clipped sentence of their own: "Here is a short story | for you."). Five, not six: six words took piper ~90 ms on a quiet machine, Jeeves's
        and Pip's pitch step's longer render ~100 (bench/voices.py), the first-audio target. A
        comma further in would make the first piece as slow as a sentence; streamed a few words
        at a time the word cut came first anyway, given in one piece (a fast brain, a prepared
        reply) it did not."""
        for match in _COMMA.finditer(sentence):
            before = len(sentence[: match.start()].split())
            if before > self.first_max_words:
                break
            if before >= self.first_cut_words:
                return match.start(), match.end()
        words = list(re.finditer(r"\S+\s+", sentence))
        if len(sentence.split()) >= self.first_max_words + MIN_TAIL_WORDS:
            cut = words[self.first_max_words - 1].end()
            return cut, cut
        return None
