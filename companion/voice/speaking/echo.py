"""Her own voice coming back through the microphone, recognised only when it is word for word hers.

Until echo cancellation removes her voice from the microphone signal, a transcript is dropped
as echo only when all of these hold: it has at least MIN_ECHO_WORDS words, those words appear
in order and unbroken in a line she played, and the user's speech overlapped the time that
line was playing (give or take the room's lag) within the last ECHO_WINDOW_S. A shorter run is
echo only when it is the opening of one of her lines and began as that line did, or the whole of
a short line of hers ("I will stop.") heard while that line was playing. One word
("yes", "no", "stop", "what") is never echo, whatever she said, but where the caller says so
(the ear, for what follows a question at her reply's onset and stopped her).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MIN_ECHO_WORDS = 4
"""Fewer words than this are always the user's: a short answer must never be eaten."""
ECHO_WINDOW_S = 6.0
"""Only lines that were playing within the last few seconds can come back as echo."""
ECHO_LAG_S = 0.6
"""How long after a line stops playing its echo can still be arriving (buffers, the room)."""
OPENING_ECHO_WORDS = 2
"""A run this long (and under MIN_ECHO_WORDS) is hers when it opens one of her lines and began
within ECHO_LAG_S of that line: the canceller lets the onset of a sentence through after the
quiet between two ("It was", a turn of its own beside two busy loops), and a user who says
those very words as she starts them is far rarer."""


@dataclass
class PlayedLine:
    """One line of hers as it went to the speaker, on the time.monotonic() clock."""

    text: str
    started: float
    ended: float | None = None
    """None while it is still playing."""


def words(text: str) -> list[str]:
    """Lower-case words without punctuation ("It's" and "its" are the same word here)."""
    return re.sub(r"[^a-z0-9 ]+", "", text.lower().replace("-", " ")).split()


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    size = len(needle)
    return any(haystack[i:i + size] == needle for i in range(len(haystack) - size + 1))


def is_echo(heard: str, played: Iterable[PlayedLine], *, spoken_from: float, spoken_to: float,
            now: float, opening_words: int = OPENING_ECHO_WORDS) -> bool:
    """True when `heard`, spoken between `spoken_from` and `spoken_to`, is her own line coming back
    (a run of `opening_words` or more that opens one of her lines is enough)."""
    said, played = words(heard), list(played)
    overlapping = [
        line for line in played
        if (line.ended if line.ended is not None else now) >= now - ECHO_WINDOW_S
        and line.started <= spoken_to
        and (line.ended if line.ended is not None else now) + ECHO_LAG_S >= spoken_from
    ]
    if len(said) < MIN_ECHO_WORDS:
        if len(said) < max(1, opening_words):
            return False
        # The whole of a short line is as surely hers as four words in order, wherever in it its
        # onset was heard (beside two busy loops her "I will stop." came back heard from 0.63 s
        # into the line, past ECHO_LAG_S, and stopped her).
        return any(words(line.text)[:len(said)] == said and abs(spoken_from - line.started) <= ECHO_LAG_S
                   for line in played) or any(words(line.text) == said for line in overlapping)
    # Her lines in the order she said them: an echo may run across a sentence boundary.
    joined = [word for line in overlapping for word in words(line.text)]
    return _contains_run(joined, said)
