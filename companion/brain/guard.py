"""Keep a streamed reply within bounds: stop at the end of the sentence that crosses the reply
limit, and stop a reply that starts repeating itself (the same sentence or line again and again).
"""

from __future__ import annotations

import re

from companion.brain.budget import estimate_tokens

REPEATS_ALLOWED = 2
"""A sentence or line may come twice (a refrain); the third time the reply is stopped before it."""
MIN_UNIT = 12
"""Shorter units ("OK.", "Yes.") are allowed to repeat."""
_BOUNDARY = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")


class ReplyGuard:
    """`feed()` visible text, get back what may go out and whether to stop reading now.

    `stop_reason` is "" (still going), "limit" (the cap was reached at a sentence end) or
    "repeating". While the sentence being written could still be a repeat, it is held back, so
    the repeat itself is never shown or spoken.
    """

    def __init__(self, cap_tokens: int) -> None:
        self.cap_tokens = cap_tokens
        self.stop_reason = ""
        self._seen: dict[str, int] = {}
        self._unit = ""  # the sentence being written
        self._shown = 0  # how much of it already went out
        self._tokens = 0  # estimate for the units already complete
        self._in_code = False  # inside a ``` fence code lines may repeat (closing braces, prints)

    def feed(self, text: str) -> tuple[str, bool]:
        if self.stop_reason:
            return "", True
        self._unit += text
        out: list[str] = []
        while True:
            boundary = _BOUNDARY.search(self._unit)
            if boundary is None:
                break
            unit, self._unit = self._unit[: boundary.end()], self._unit[boundary.end():]
            key = _key(unit)
            if unit.count("```") % 2:
                self._in_code = not self._in_code
            elif len(key) >= MIN_UNIT and not self._in_code:
                if self._seen.get(key, 0) >= REPEATS_ALLOWED:
                    self.stop_reason = "repeating"
                    self._unit = ""
                    return "".join(out), True
                self._seen[key] = self._seen.get(key, 0) + 1
            out.append(unit[self._shown:])
            self._shown = 0
            self._tokens += estimate_tokens(unit)
            if self._tokens >= self.cap_tokens:
                self.stop_reason = "limit"
                self._unit = ""
                return "".join(out), True
        if not self._could_repeat(self._unit):
            out.append(self._unit[self._shown:])
            self._shown = len(self._unit)
        # (four characters a token: a cheap bound, checked on every piece)
        if self._tokens + len(self._unit) / 4 >= self.cap_tokens * 1.5:
            # A "sentence" that never ends (a list without stops, a code dump): stop anyway.
            self.stop_reason = "limit"
            return "".join(out), True
        return "".join(out), False

    def finish(self) -> str:
        """What is still held back once the reply is complete."""
        if self.stop_reason:
            return ""
        rest = self._unit[self._shown:]
        key = _key(self._unit)
        if len(key) >= MIN_UNIT and self._seen.get(key, 0) >= REPEATS_ALLOWED:
            self.stop_reason = "repeating"
            rest = ""
        self._unit, self._shown = "", 0
        return rest

    def _could_repeat(self, partial: str) -> bool:
        if self._in_code:
            return False
        key = _key(partial)
        return bool(key) and any(count >= REPEATS_ALLOWED and seen.startswith(key)
                                 for seen, count in self._seen.items())


def _key(unit: str) -> str:
    return " ".join(unit.lower().split())
