"""Live, right after her name changes: words that may call her by a name whose spelling is
still being learned wait for it, instead of being ignored as room talk. Real learning (espeak-ng
samples, the real NameLearning and Calling); the hearing is one that writes "Pip" as "Tep", as
Whisper does for some people's "Pip" (her and espeak-ng's voices it writes right)."""

from __future__ import annotations

import asyncio

import numpy as np

from companion.events import EventBus
from companion.voice.addressing import learning
from companion.voice.addressing.addressed import AddressSettings, Listening
from companion.voice.addressing.calling import Calling
from companion.voice.addressing.learning import NameLearning


class HearsPipAsTep:
    """A hearing of its own: whatever was said, "Pip" comes back as "Tep"."""

    def __init__(self) -> None:
        self.calls = 0

    async def transcribe(self, audio: np.ndarray) -> str:
        self.calls += 1
        await asyncio.sleep(0)  # a real engine answers on another thread
        return "Tep, what time is it?"


def live_calling(names: tuple[str, ...], hearing) -> Calling:
    calling = Calling(EventBus(), clock=lambda: 0.0, her_voice_playing=lambda: False)
    calling.policy.apply(AddressSettings(mode=Listening.CALLED, names=names))
    calling.names = lambda: names
    calling.learning = NameLearning(hearing)
    calling.wait_for_learning = False  # live: nothing waits for learning up front
    # Live hearing is busy while it judges these very words: learning gives way to it.
    calling.learning.yield_to = lambda: True
    return calling


async def test_a_call_by_a_name_still_being_learned_waits_for_its_spelling_and_calls_her(monkeypatch):
    monkeypatch.setattr(learning, "_LEARNED", {})  # as just after switching to Pip
    hearing = HearsPipAsTep()
    calling = live_calling(("Pip",), hearing)
    try:
        verdict = await asyncio.wait_for(calling.judge("Tep, what time is it?", 0.0, 2.0), 60)
    finally:
        calling.close()

    assert verdict.turn and verdict.reason == "name", verdict
    assert calling.learning.learned["pip"].forms == ("tep",)


async def test_room_talk_while_her_name_is_learned_waits_no_longer_than_the_learning(monkeypatch):
    monkeypatch.setattr(learning, "_LEARNED", {})
    calling = live_calling(("Pip",), HearsPipAsTep())
    try:
        verdict = await asyncio.wait_for(calling.judge("Did you see the game last night?", 0.0, 2.0), 60)
        assert not calling.learning.pending(("Pip",))  # learned meanwhile, not left for a timeout
    finally:
        calling.close()

    assert not verdict.turn and verdict.reason == "not-called", verdict
