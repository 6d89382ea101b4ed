"""Reading a yes or a no to an approval request, said aloud or typed."""

from __future__ import annotations

import re

from companion.events import Speak, SpeechKind

__all__ = ["answer_aloud", "destructive", "explicit_consent", "how_to_consent", "spoken_answer", "still_waiting",
           "typed_answer"]

APPROVED, DECLINED = "approved", "declined"

_YES = re.compile(r"^(yes|yeah|yep|yup|sure|ok(ay)?|go ahead|do it|approve[d]?|run it)\b")
_NO = re.compile(r"^(no|nope|nah|don'?t|do not|stop|cancel|decline[d]?)\b")
_ALWAYS = re.compile(r"\balways\b")
_EXPLICIT = re.compile(r"^yes run it( please| now)?$")
"""The one spoken phrase that approves a destructive command (a TV's or her own "yes" won't)."""
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


def destructive(request) -> bool:
    """A command that can destroy data (rm -r, dd, …: never remembered, and not merely "once
    only"): a click approves it, or the explicit phrase said aloud; never a plain "yes"."""
    return not request.saveable and not getattr(request, "once_only", "")


def explicit_consent(text: str) -> bool:
    """`text` is the explicit spoken phrase ("yes, run it") a destructive command needs."""
    return bool(_EXPLICIT.match(_words(text)))


def how_to_consent(*, voice: bool) -> str:
    """What a plain yes to a destructive command is told; only what exists in this mode."""
    return "Click Yes to run it, or say 'yes, run it'." if voice else "Click Yes to run it."


def still_waiting(gate) -> str:
    """What she says when she is called while the newest card waits and what was said answers
    nothing: the words that can answer that card (a destructive one takes no plain yes)."""
    newest = _newest(gate)
    if newest is not None and newest[1] is not None and destructive(newest[1]):
        return "The card is still waiting: say 'yes, run it' or no, or click it."
    return "The card is still waiting: say yes or no, or click it."


def _newest(gate) -> tuple[str, object] | None:
    """(id, request) of the newest open card, or None when no card waits."""
    approver = getattr(gate, "approver", None)
    pending = getattr(approver, "pending", None)
    if gate is None or pending is None or not pending():
        return None
    request_id = pending()[-1]
    return request_id, getattr(approver, "request", lambda _id: None)(request_id)


def answer_aloud(gate, text: str) -> bool:
    """A spoken "yes" or "no" while an approval request is open answers the newest one through
    the gate; True when `text` was such an answer (so it must start no turn). A plain yes to a
    destructive command approves nothing: she says how to approve it instead."""
    newest = _newest(gate)
    reply = spoken_answer(text)
    if newest is None or reply is None:
        return False
    decision, always = reply
    request_id, request = newest
    if decision == APPROVED and request is not None and destructive(request) and not explicit_consent(text):
        bus = getattr(gate, "bus", None)
        if bus is not None:
            bus.emit(Speak(SpeechKind.SAY, how_to_consent(voice=True)))
        return True
    return gate.answer(request_id, decision, always=always)
