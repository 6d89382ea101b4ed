"""A brain that prepares replies without a model: each prepared turn is a held bus the test feeds."""

from __future__ import annotations

from companion.brain.prepared import HeldBus
from companion.events import EventBus


class PreparedTurnStandIn:
    """What the preparer uses of brain/prepared.PreparedTurn: its held bus."""

    def __init__(self, front) -> None:
        self.hold = HeldBus(EventBus(), front)

    def discard(self) -> None:
        self.hold.discard()


class PreparingBrain:
    def __init__(self) -> None:
        self.turns: list[PreparedTurnStandIn] = []

    def prepare(self, text, front):
        self.turns.append(PreparedTurnStandIn(front))
        return self.turns[-1]
