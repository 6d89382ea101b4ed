"""A prepared reply's words reach her mouth whenever they stream: during the pause, and in the
moment between the end of the turn and the start of her turn."""

from __future__ import annotations

from prepared_stand_ins import PreparingBrain

from companion.events import ReplyDelta
from companion.voice.turns.preparing import ReplyPreparer


class HeldMouth:
    """The speaker's side the preparer talks to: which lines it was given under the hold."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def hold(self) -> None:
        pass

    def say(self, text, *, prepared=False) -> None:
        assert prepared
        self.lines.append(text)

    def drop_held(self) -> None:
        self.lines.clear()


def test_words_that_stream_after_the_turn_is_handed_over_still_reach_her_mouth():
    brain, mouth = PreparingBrain(), HeldMouth()
    preparer = ReplyPreparer(brain, mouth)
    preparer.start(1, "Can you recommend a good book?")
    [turn] = brain.turns
    preparation = preparer.take(1)  # the turn is over; her turn has not begun yet
    delta = ReplyDelta("Sure, I")
    turn.hold.emit(delta)
    turn.hold.emit(ReplyDelta(" can help with that."))
    assert mouth.lines == ["Sure,"]
    # Her mouth skips what the front had, so the front must have had it.
    assert preparer.shown(delta)
    assert preparation.splitter.flush() == ["I can help with that."]


def test_a_dropped_preparation_puts_nothing_more_in_her_mouth():
    brain, mouth = PreparingBrain(), HeldMouth()
    preparer = ReplyPreparer(brain, mouth)
    preparer.start(1, "Could you remind me to")
    [turn] = brain.turns
    front = turn.hold._front
    preparer.drop()
    front(ReplyDelta("Sure, I will."))
    assert mouth.lines == []
