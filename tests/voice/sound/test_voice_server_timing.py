"""The echo canceller on the sound server's own timing (exact stamps, companion.voice.sound.pulse):
a pause or loss the server reports re-aligns her echo at once; an unreported jump is counted, not
followed; the slow drift of a server's interpolated clock is not followed."""

from __future__ import annotations

import numpy as np

from companion.voice.sound.echo_canceller import EchoCanceller, EchoSettings, EchoStats, db
from companion.voice.sound.pulse import stream_clock
from companion.voice.sound.timeline import EXACT_JUMP_RUN, EXACT_RUN, Timeline
from companion.voice.speaker_check import compare

RATE = 16_000
BLOCK = 320  # the server's 20 ms fragments


def steady(line: Timeline, t0: float, blocks: int, *, drift_per_s: float = 0.0, **flags) -> float:
    """Push `blocks` blocks stamped exactly (plus a drift of the stamps); returns the next stamp."""
    for i in range(blocks):
        t = t0 + i * BLOCK / RATE
        line.push(np.ones(BLOCK, dtype=np.float32), RATE, t + (t - 10.0) * drift_per_s, exact=True,
                  **(flags if i == 0 else {}))
    return t0 + blocks * BLOCK / RATE


def test_an_underrun_the_server_reports_moves_the_stream_within_a_few_blocks_and_is_no_jump():
    line = Timeline()
    t = steady(line, 10.0, 150)  # 3 s: past the first seconds of a new stream
    counted = line.end
    # The speaker ran dry: the server paused the stream for 120 ms until it was refilled.
    steady(line, t + 0.12, EXACT_RUN + 2, xrun=True)
    assert line.moves == 1 and line.jumps == 0
    assert line.end == counted + (EXACT_RUN + 2) * BLOCK + round(0.12 * RATE)


def test_a_jump_no_xrun_announced_is_counted_and_not_followed_and_a_moment_of_it_is_not_counted():
    """On a loaded machine the client's interpolated clock strays and comes back, while every real
    underrun, overflow or hole is reported: an unreported jump only counts."""
    line = Timeline()
    t = steady(line, 10.0, 150)
    t = steady(line, t + 0.05, EXACT_RUN + 2)  # 50 ms off for a few blocks, then back
    t = steady(line, t - 0.05, 10)
    assert (line.moves, line.jumps) == (0, 0)
    counted = line.end
    steady(line, t + 0.05, EXACT_JUMP_RUN + 2)  # off for longer
    assert (line.moves, line.jumps) == (0, 1)
    assert line.end == counted + (EXACT_JUMP_RUN + 2) * BLOCK  # every sample kept, none inserted


def test_the_slow_drift_of_a_servers_clock_is_not_followed():
    """Measured on a monitor source: its stamps ran 0.5 ms/s ahead of its audio while the echo's
    delay stayed put; following them shifted the pairing and echo removal fell to 16-24 dB."""
    line = Timeline()
    steady(line, 10.0, 3000, drift_per_s=0.0005)  # a minute: 30 ms of drift in the stamps
    assert line.end == line.start + 3000 * BLOCK
    assert (line.moves, line.jumps) == (0, 0)


def test_a_speaker_paused_by_an_underrun_keeps_her_echo_cancelled_on_the_servers_timing():
    """Her voice (noise standing in for it) with a 150 ms underrun pause in the middle: the server
    flags it and its stamps say where the audio went, so the removal is back within 250 ms
    (on PortAudio's stamps the stream waits 0.5-1 s for them to settle)."""
    rng = np.random.default_rng(3)
    voice = (0.1 * rng.standard_normal(8 * RATE)).astype(np.float32)
    pause_at, pause = 4 * RATE, int(0.15 * RATE)
    played = np.concatenate([voice[:pause_at], np.zeros(pause, dtype=np.float32), voice[pause_at:]])
    delay = int(0.06 * RATE)
    mic = np.zeros(played.size + RATE, dtype=np.float32)
    mic[delay:delay + played.size] += 0.5 * played
    canceller = EchoCanceller(EchoSettings())
    t0 = 100.0
    events = [(i + (pause if i >= pause_at else 0), "far", i) for i in range(0, voice.size, BLOCK)]
    events += [(k + BLOCK // 2, "near", k) for k in range(0, played.size, BLOCK)]  # after it sounded
    clean = []
    for when, kind, i in sorted(events):
        if kind == "far":  # as written: the pause shows in the stamps, and the server flags it
            canceller.render(voice[i:i + BLOCK], RATE, t0 + (when) / RATE, xrun=i == pause_at, exact=True)
        else:
            clean.append(canceller.capture(mic[i:i + BLOCK], RATE, t0 + i / RATE, exact=True))
    out = np.concatenate(clean)
    after = slice(pause_at + pause + RATE // 4, pause_at + pause + RATE)  # from 250 ms after it
    assert db(np.dot(mic[after], mic[after]) / np.dot(out[after], out[after])) > 18
    assert canceller.stats.xruns == 1 and canceller.stats.jumps == 0


def test_the_speaker_check_stutters_on_what_the_server_reports_not_on_a_straying_clock():
    before = EchoStats(far_energy=1.0, raw_energy=0.25, clean_energy=0.001, echo_frames=300)
    strayed = EchoStats(far_energy=2.0, raw_energy=0.5, clean_energy=0.002, echo_frames=600, jumps=3)
    assert not compare(before, strayed, True).stuttered
    reported = EchoStats(far_energy=2.0, raw_energy=0.5, clean_energy=0.002, echo_frames=600, xruns=1)
    assert compare(before, reported, True).stuttered


def test_a_wild_clock_from_the_server_is_no_time_and_a_slightly_negative_one_is():
    """Beside busy loops libpulse's smoother returned clocks of 4.7e9 and -3.8e11 s on her 24 kHz
    speaker: taken as times, they restarted the speaker's timeline in another millennium and
    her echo went uncancelled ("You're a is the key" heard from her own line)."""
    assert stream_clock(3_000_000, counted_s=3.05) == 3.0
    assert stream_clock((1 << 64) - 20_000, counted_s=0.01) == -0.02  # just after a start: "negative"
    assert stream_clock(4_720_028_214 * 10**6, counted_s=12.0) is None
    assert stream_clock((1 << 64) - 379_335_203_227 * 10**6, counted_s=12.0) is None
