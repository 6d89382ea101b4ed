"""Any ordering of cancels, interruptions and notices: each notice plays exactly once, and the
line of a turn said after them all still plays (Hypothesis picks the orderings)."""

from __future__ import annotations

import asyncio

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.voice.sound.audio import WavSink
from companion.voice.speaking.speaker import Speaker


class Tone:
    """A synthesizer that takes a few awaits per line, as a real one's worker thread does."""

    sample_rate = 16_000

    async def synthesize(self, text: str) -> np.ndarray:
        for _ in range(3):
            await asyncio.sleep(0)
        return np.full(160, 0.1, dtype=np.float32)


STEPS = st.one_of(
    st.tuples(st.just("say"), st.integers(1, 3)),
    st.tuples(st.just("notice"), st.just(0)),
    st.tuples(st.just("interrupt"), st.integers(1, 3)),
    st.tuples(st.just("cancel"), st.just(0)),
    st.tuples(st.just("wait"), st.integers(1, 6)),
)


async def _play(steps: list[tuple[str, int]]) -> tuple[list[str], list[str]]:
    sink = WavSink(lambda: 0.0, rate=16_000)
    speaker = Speaker(Tone(), sink)
    played: list[str] = []
    speaker.on_playing = lambda line: played.append(line.text)
    notices = []
    for n, (what, arg) in enumerate(steps):
        if what == "say":
            speaker.say(f"line {n} of turn {arg}", turn=arg)
        elif what == "notice":
            notices.append(f"notice {n}")
            speaker.say(notices[-1], notice=True)
        elif what == "interrupt":
            speaker.interrupt(arg)
        elif what == "cancel":
            speaker.cancel()
        else:
            for _ in range(arg):
                await asyncio.sleep(0)
    speaker.say("the next answer", turn=9)
    await asyncio.wait_for(speaker.idle.wait(), 10)
    await speaker.close()
    return played, notices


@settings(max_examples=150, deadline=None)
@given(st.lists(STEPS, max_size=14))
def test_no_ordering_of_cancels_drops_or_repeats_a_notice_or_silences_the_next_turn(steps):
    played, notices = asyncio.run(_play(steps))
    assert [p for p in played if p.startswith("notice")] == notices
    assert played[-1] == "the next answer"
    assert len(played) == len(set(played))
