"""Waiting for a call costs little (issue 56 item 4): her speaker rests when she has nothing to
say, the microphone wakes her loop once a frame, and a quiet room passes the echo canceller in
one step. Each shortcut leaves what she hears and says unchanged.

Real PulseAudio (the private one the sound tests share) for the devices; the real WebRTC
canceller for the echo path.
"""

from __future__ import annotations

import asyncio
import signal
import time

import numpy as np
from audio_env import wait_until_recorded

from companion.events import ErrorOccurred, EventBus
from companion.voice.sound.audio import read_wav
from companion.voice.sound.echo_canceller import APM_FRAME, EchoCanceller
from companion.voice.sound.frames import FRAME_SAMPLES, SAMPLE_RATE
from companion.voice.sound.pulse_devices import PulseSink, PulseSource
from companion.voice.sound.timeline import Timeline
from companion.voice.sound.watch import SoundWatch


async def until(condition, timeout_s: float = 10.0) -> None:
    """Until `condition()` holds (the stream's state lives on libpulse's thread: nothing to await)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


def tone(seconds: float, rate: int, level: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (level * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


async def test_a_speaker_with_nothing_to_play_rests_no_stall_is_seen_and_her_next_line_wakes_it_and_is_heard(
        pulse_audio, tmp_path):
    sink = PulseSink(rest_after_s=0.3)
    bus = EventBus()
    lost = asyncio.Event()
    bus.subscribe(lambda event: lost.set() if isinstance(event, ErrorOccurred) else None)
    watch = SoundWatch(bus, sink=sink, stall_s=0.5)
    watching = asyncio.ensure_future(watch.run())
    recording = tmp_path / "speaker.wav"
    recorder = None
    try:
        await until(lambda: sink.resting)
        # Resting is silence on purpose: the watch, which drops a speaker whose blocks stop for
        # stall_s, must not take it for a stalled server.
        try:
            await asyncio.wait_for(lost.wait(), 4 * 0.5)
            raise AssertionError("a resting speaker was taken for a stalled sound server")
        except TimeoutError:
            pass
        recorder = pulse_audio.record_speaker(recording)
        await asyncio.to_thread(wait_until_recorded, recording, 0.2)
        played = await asyncio.wait_for(sink.play(tone(0.6, sink.rate), sink.rate), 10)
        assert played and not sink.resting
        await asyncio.to_thread(wait_until_recorded, recording, 1.4)
        await until(lambda: sink.resting)  # and rests again once she is done
    finally:
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)
            recorder.wait(10)
        watch.close()
        await watching
        await sink.close()
    heard, rate = read_wav(recording)
    windows = heard[:heard.size // 320 * 320].reshape(-1, 320)
    sounding = np.sqrt(np.mean(windows ** 2, axis=1)) > 0.1
    assert sounding.sum() * 320 / rate >= 0.56  # the whole 0.6 s line sounded, not a clipped start
    assert not lost.is_set()


def test_after_a_pause_the_speakers_next_block_starts_a_new_run_where_its_stamp_says():
    timeline = Timeline()
    block = np.full(320, 0.5, np.float32)
    at = 100.0
    for _ in range(10):
        timeline.push(block, SAMPLE_RATE, at, exact=True)
        at += 0.02
    timeline.pause()
    resumed_at = at + 0.3  # corked 300 ms: under RESTART_S, which a plain gap needs to restart
    timeline.push(block * 2, SAMPLE_RATE, resumed_at, exact=True)
    assert timeline.runs == 2
    first = round(resumed_at * SAMPLE_RATE)
    assert np.allclose(timeline.take(first, 320), 1.0)
    assert not timeline.take(first - 320, 320).any()  # the gap is silence, not the new audio


async def test_the_microphone_wakes_her_loop_once_a_frame_not_once_a_block(pulse_audio):
    source = PulseSource()
    handed: list[int] = []
    put = source._put
    source._put = lambda block: (handed.append(0 if block is None else block.size), put(block))
    try:
        for _ in range(3):  # the stream's first burst
            await asyncio.wait_for(source.read(), 10)
        handed.clear()
        frames = [await asyncio.wait_for(source.read(), 10) for _ in range(40)]
    finally:
        source.close()
    assert all(frame.size == FRAME_SAMPLES for frame in frames)
    # 40 frames of 32 ms arrive as 64 fragments of 20 ms: one wake-up per frame, not per fragment.
    assert len(handed) <= 42
    assert all(size >= FRAME_SAMPLES - 320 for size in handed[1:-1])


def test_a_quiet_room_while_her_speaker_rests_passes_the_canceller_exactly_as_frame_by_frame():
    rng = np.random.default_rng(56)
    quiet = (rng.normal(0, 1e-4, SAMPLE_RATE * 2)).astype(np.float32)  # -80 dBFS room
    voice = (0.1 * np.sin(2 * np.pi * 220 * np.arange(SAMPLE_RATE) / SAMPLE_RATE)).astype(np.float32)
    near = np.concatenate([quiet, voice, quiet])
    far = (0.2 * np.sin(2 * np.pi * 330 * np.arange(SAMPLE_RATE // 2) / SAMPLE_RATE)).astype(np.float32)

    def run(shortcut: bool) -> tuple[np.ndarray, int, int]:
        canceller = EchoCanceller()
        if not shortcut:
            canceller._pass_quiet = lambda: None
        out, at = [], 50.0
        canceller.render(far, SAMPLE_RATE, at, exact=True)  # she spoke, then her speaker rested
        canceller.far_paused()
        for start in range(0, near.size, 320):
            out.append(canceller.capture(near[start:start + 320], SAMPLE_RATE, at + start / SAMPLE_RATE, exact=True))
        canceller.release()
        return np.concatenate(out), canceller.stats.frames, canceller.stats.quiet_frames

    fast, frames, quiet_frames = run(True)
    slow, slow_frames, slow_quiet = run(False)
    assert (frames, quiet_frames) == (slow_frames, slow_quiet) and quiet_frames > frames // 2
    assert fast.size == slow.size == near.size // APM_FRAME * APM_FRAME
    assert np.array_equal(fast, slow)
