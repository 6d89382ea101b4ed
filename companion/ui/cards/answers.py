"""The window's answer path: what the user types (or she hears) while a card is open goes to it."""

from __future__ import annotations

from companion.safety.consent.answers import how_to_consent, typed_answer
from companion.ui.cards.approval_card import ApprovalPanel
from companion.ui.transcript import TranscriptView

__all__ = ["TYPED_LETTERS", "answer_card"]

TYPED_LETTERS = {"y": "yes", "n": "no", "a": "always"}
"""The one-letter answers `companion chat` takes, read the same way in the text box."""


def answer_card(cards: ApprovalPanel, captions: TranscriptView, text: str, *, typed: bool) -> bool:
    """Answer the newest open card with `text` if it is an answer; True when it was taken as
    one (so it starts no turn, which would cancel the one waiting for the card).

    A typed message counts only when it is nothing but the answer (the terminal's y / n / a
    too). A typed yes never approves a command that can destroy data: a click does, or the
    explicit phrase said aloud; the text box may hold words meant for something else."""
    words = text
    card = cards.newest_open()
    letter = text.strip().lower()
    if typed and card is not None and letter in TYPED_LETTERS:
        if letter == "a" and not card.request.saveable:
            captions.add_heard(text, spoken=False)
            captions.add_notice("I can't remember this one; it always asks. Answer yes or no on the card.")
            return True
        words = TYPED_LETTERS[letter]
    reply = typed_answer(words) if typed and card is not None else None
    if reply is not None and reply[0] == "approved" and card.destructive and card.is_armed():
        captions.add_heard(text, spoken=False)
        captions.add_notice(how_to_consent(voice=cards.spoken_answers))
        return True
    if not cards.answer_words(words, typed=typed):
        return False
    captions.add_heard(text, spoken=not typed)
    return True
