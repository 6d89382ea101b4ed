"""Under load her ear drops partial transcripts first (companion.voice.turns.load), judged from
lateness measured on a clock the tests move by hand: no timing in any assertion."""

from __future__ import annotations

import asyncio
from collections import deque

import numpy as np

from companion.voice.sound.frames import FRAME_S, FRAME_SAMPLES
from companion.voice.turns.ear import PARTIAL_EVERY_S, Ear
from companion.voice.turns.load import LATE_S, PARTIAL_SHARE, PartialPacer


class Clock:
    """The time the pacer reads, moved only by the microphone below."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Quiet:
    """Her side: never speaking."""

    playing = False
    busy = False

    def __init__(self) -> None:
        self.recent_played = deque()


class TalkingMicrophone:
    """The user talking without a break, one frame per read. Each read moves the clock on by a
    frame's time, or by `steps[index]` where given: more is the ear falling behind (its loop
    was busy), less is the ear catching up on frames that waited."""

    realtime = True

    def __init__(self, clock: Clock, frames: int, steps: dict[int, float] | None = None) -> None:
        self.clock, self.frames, self.steps = clock, frames, steps or {}
        self.index = -1

    async def read(self):
        await asyncio.sleep(0)  # the ear's partial transcripts get their turn between frames
        if self.index + 1 >= self.frames:
            return None
        self.index += 1
        self.clock.now += self.steps.get(self.index, FRAME_S)
        return np.full(FRAME_SAMPLES, 0.2, dtype=np.float32)

    def close(self) -> None:
        self.frames = 0


class Speech:
    def probability(self, frame) -> float:
        return 0.9

    def reset(self) -> None:
        pass


class PartialEngine:
    """An engine with partial transcripts, each taking `costs[n]` seconds on the clock (the last
    cost repeats); it notes the frame at which each one began."""

    def __init__(self, clock: Clock, microphone: TalkingMicrophone, costs: list[float]) -> None:
        self.clock, self.microphone, self.costs = clock, microphone, costs
        self.began_at_frame: list[int] = []

    async def partial(self, audio) -> str:
        cost = self.costs[min(len(self.began_at_frame), len(self.costs) - 1)]
        self.began_at_frame.append(self.microphone.index)
        started = self.clock.now
        while self.clock.now - started < cost:
            await asyncio.sleep(0)
        return "so far"

    async def transcribe(self, audio) -> str:
        return "all of it"


async def talk(frames: int, costs: list[float], steps: dict[int, float] | None = None) -> tuple[list[int], Ear]:
    """The frames at which partial transcripts began while the user talked for `frames` frames."""
    clock = Clock()
    microphone = TalkingMicrophone(clock, frames, steps)
    engine = PartialEngine(clock, microphone, costs)
    ear = Ear(source=microphone, vad=Speech(), transcriber=engine, her_voice=Quiet(),
              heard=lambda _utterance: asyncio.sleep(0), barged_in=lambda: None)
    ear.partial_pacer = PartialPacer(PARTIAL_EVERY_S, clock=clock)
    await ear.run()
    return engine.began_at_frame, ear


def frames_in(seconds: float) -> int:
    return round(seconds / FRAME_S)


def gaps(began: list[int]) -> list[int]:
    return [b - a for a, b in zip(began, began[1:], strict=False)]


async def test_partial_transcripts_get_rarer_while_each_takes_long_and_return_to_their_pace_when_one_is_quick():
    slow, quick = 0.4, 0.05  # 0.4 s of a core each would be 83 % of one at the steady pace
    began, _ear = await talk(frames_in(8.0), [slow, slow, quick])
    pace = frames_in(PARTIAL_EVERY_S)
    spaced = frames_in(slow / PARTIAL_SHARE)
    # After each slow one, the next waits until the slow one is at most half a core's work.
    assert all(gap >= spaced for gap in gaps(began)[:2]), began
    # The first quick one brings back the steady pace.
    assert len(gaps(began)) >= 4 and all(abs(gap - pace) <= 1 for gap in gaps(began)[2:]), began


async def test_partial_transcripts_stop_while_the_ear_is_behind_and_resume_once_it_has_caught_up():
    # At frame 40 the ear's loop was busy for a second; it then reads the frames that waited
    # six times faster than they come, and is back on time some 37 frames later.
    blocked_at, catch_up = 40, FRAME_S / 6
    steps = {blocked_at: 1.0 + FRAME_S, **{blocked_at + n: catch_up for n in range(1, 60)}}
    behind_until = blocked_at + next(n for n in range(1, 60) if 1.0 - n * (FRAME_S - catch_up) <= LATE_S)
    began, ear = await talk(frames_in(6.0), [0.0], steps)
    assert not [frame for frame in began if blocked_at <= frame < behind_until], began
    assert ear.partial_pacer.held_late > 0  # (one was due while it was behind)
    assert [frame for frame in began if frame >= behind_until], began  # and they came back
    before = [frame for frame in began if frame < blocked_at]
    assert gaps(before) and all(abs(gap - frames_in(PARTIAL_EVERY_S)) <= 1 for gap in gaps(before)), began


def test_lateness_is_measured_from_the_earliest_frame_and_a_new_stream_starts_afresh():
    clock = Clock()
    pacer = PartialPacer(PARTIAL_EVERY_S, clock=clock)
    pacer.frame_heard(FRAME_S, timeline="first")
    clock.now += 0.3 + FRAME_S  # the next frame finished 0.3 s later than its audio came
    pacer.frame_heard(2 * FRAME_S, timeline="first")
    assert round(pacer.late_by_s, 3) == 0.3 and pacer.behind
    clock.now += 0.001  # the frames that waited are read at once: still behind, a little less
    pacer.frame_heard(3 * FRAME_S, timeline="first")
    assert round(pacer.late_by_s, 3) == round(0.3 + 0.001 - FRAME_S, 3)
    clock.now += 5.0  # the microphone was reopened: a new stream is judged on its own
    pacer.frame_heard(FRAME_S, timeline="second")
    assert pacer.late_by_s == 0.0 and not pacer.behind


def test_a_partial_is_due_at_the_steady_pace_and_one_that_took_long_spaces_out_the_next():
    clock = Clock()
    pacer = PartialPacer(PARTIAL_EVERY_S, clock=clock)
    pacer.frame_heard(FRAME_S)
    assert not pacer.may_start(PARTIAL_EVERY_S - FRAME_S)
    assert pacer.may_start(PARTIAL_EVERY_S)
    pacer.partial_started()
    clock.now += 0.3
    pacer.partial_done()
    assert round(pacer.last_took_s, 6) == 0.3
    assert not pacer.may_start(PARTIAL_EVERY_S) and pacer.may_start(0.3 / PARTIAL_SHARE)
