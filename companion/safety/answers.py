"""Reading a yes or a no to an approval request, said aloud or typed."""

from __future__ import annotations

import re

__all__ = ["answer_aloud", "spoken_answer", "typed_answer"]

APPROVED, DECLINED = "approved", "declined"

_YES = re.compile(r"^(yes|yeah|yep|yup|sure|ok(ay)?|go ahead|do it|approve[d]?|run it)\b")
_NO = re.compile(r"^(no|nope|nah|don'?t|do not|stop|cancel|decline[d]?)\b")
_ALWAYS = re.compile(r"\balways\b")
_WHOLE_ANSWER = re.compile(
    r"^(yes|yeah|yep|yup|sure|ok(ay)?|go ahead|do it|approve[d]?|run it|always|no|nope|nah"
    r"|don'?t|do not|stop|cancel|decline[d]?)( (please|go ahead|do it|run it|always|allow it"
    r"|always allow( it)?|thanks|thank you|don'?t|do not))*$")


def spoken_answer(text: str) -> tuple[str, bool] | None:
    """Read a spoken reply to a card: ("approved"|"declined", always) or None if it isn't one."""
    words = _words(text)
    if _NO.match(words):
        return DECLINED, False
    if _YES.match(words) or words.startswith("always"):
        return APPROVED, bool(_ALWAYS.search(words))
    return None


def typed_answer(text: str) -> tuple[str, bool] | None:
    """Read a typed message as a card's answer only when it is nothing but an answer ("yes",
    "no, don't"): a sentence that merely starts with "yes" is a message to her, not an OK."""
    words = _words(text)
    return spoken_answer(words) if _WHOLE_ANSWER.match(words) else None


def _words(text: str) -> str:
    return re.sub(r" +", " ", re.sub(r"[^a-z' ]+", " ", text.lower())).strip()


def answer_aloud(gate, text: str) -> bool:
    """A spoken "yes" or "no" while an approval request is open answers the newest one through
    the gate; True when `text` was such an answer (so it must start no turn)."""
    pending = getattr(getattr(gate, "approver", None), "pending", None)
    if gate is None or pending is None or not pending():
        return False
    reply = spoken_answer(text)
    if reply is None:
        return False
    decision, always = reply
    return gate.answer(pending()[-1], decision, always=always)
