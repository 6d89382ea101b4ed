"""The echo canceller on a simulated room, with the real WebRTC module, piper and Whisper.

Her voice plays at 22.05 kHz in 20 ms blocks stamped with their DAC times, the microphone
hears it 60 ms later at -6 dB (plus a reflection) in 32 ms blocks stamped with their ADC
times, as PortAudio reports them; the user's words arrive on top of hers.
"""

from __future__ import annotations

import numpy as np
import pytest
from audio_env import espeak_wav

from companion.voice.sound.audio import read_wav, resample
from companion.voice.sound.echo_canceller import (
    APM_FRAME,
    SETTLE_BLOCKS,
    EchoCanceller,
    EchoSettings,
    Timeline,
    db,
)
from companion.voice.sound.echo_worker import EchoWorker

RATE = 16_000
HER_WORDS = ("The capital of Australia is Canberra. It was chosen as a compromise between "
             "Sydney and Melbourne, and it is a planned city with many parks and lakes.")


def words(text: str) -> list[str]:
    return "".join(c for c in text.lower() if c.isalnum() or c == " ").split()


def room(far16: np.ndarray, *, delay_s: float = 0.06, gain: float = 0.5) -> np.ndarray:
    """What the microphone hears of `far16`: the direct path and one wall reflection."""
    echo = np.zeros(far16.size + RATE, dtype=np.float32)
    d = int(delay_s * RATE)
    echo[d:d + far16.size] += gain * far16
    r = d + int(0.011 * RATE)
    echo[r:r + far16.size] += 0.4 * gain * far16
    return echo


def run_room(canceller: EchoCanceller, far: np.ndarray, far_rate: int, near: np.ndarray, *,
             output_lead_s: float = 0.12, input_lag_s: float = 0.04, clock0: float = 1000.0,
             dac_skew_s: float = 0.0) -> np.ndarray:
    """Feed both streams as PortAudio's callbacks would, in the order they would arrive.

    The speaker's block for DAC time t is handed over at t - output_lead_s; the microphone's
    block captured at t arrives at t + block + input_lag_s. Returns the cleaned microphone.
    """
    out_block, in_block = int(0.02 * far_rate), 512
    events = []
    total_s = near.size / RATE
    far = np.concatenate([far, np.zeros(int((total_s + 1) * far_rate) - far.size, dtype=np.float32)])
    for i in range(0, int((total_s + 1) * far_rate) - out_block, out_block):
        dac = clock0 + i / far_rate
        events.append((dac - output_lead_s, "far", far[i:i + out_block], dac + dac_skew_s))
    for i in range(0, near.size - in_block + 1, in_block):
        adc = clock0 + i / RATE
        events.append((adc + in_block / RATE + input_lag_s, "near", near[i:i + in_block], adc))
    events.sort(key=lambda e: e[0])
    cleaned = []
    for _arrival, kind, block, stamp in events:
        if kind == "far":
            canceller.render(block, far_rate, stamp)
        else:
            cleaned.append(canceller.capture(block, RATE, stamp))
    return np.concatenate(cleaned)


@pytest.fixture(scope="module")
def her_voice(piper_voice) -> tuple[np.ndarray, int]:
    return piper_voice.synthesize_sync(HER_WORDS), piper_voice.sample_rate


def test_her_voice_coming_back_into_the_microphone_is_removed_by_more_than_30_db(her_voice):
    far, far_rate = her_voice
    near = room(resample(far, far_rate, RATE))
    canceller = EchoCanceller(EchoSettings())

    clean = run_room(canceller, far, far_rate, near)

    settled = slice(2 * RATE, far.size * RATE // far_rate)  # after the first two seconds
    erle = db(float(np.dot(near[settled], near[settled])) / max(float(np.dot(clean[settled], clean[settled])), 1e-12))
    assert erle > 30, erle
    assert canceller.hears_her
    stats = canceller.stats
    assert stats.echo_frames > 300 and db(stats.raw_energy / stats.far_energy) > -8
    assert stats.ms_per_frame < 5  # the bench measures it properly; this only catches a runaway


def test_a_quiet_room_skips_the_module_until_she_speaks_and_her_echo_is_still_removed(her_voice):
    far, far_rate = her_voice
    quiet_s = 3
    # A quiet room for three seconds (-70 dBFS of noise), then her voice and its echo.
    far = np.concatenate([np.zeros(quiet_s * far_rate, dtype=np.float32), far])
    rng = np.random.default_rng(3)
    near = room(resample(far, far_rate, RATE))
    near += (0.0003 * rng.standard_normal(near.size)).astype(np.float32)
    canceller = EchoCanceller(EchoSettings())

    clean = run_room(canceller, far, far_rate, near)

    # All but the first half second of the quiet went past the module, untouched.
    assert canceller.stats.quiet_frames >= (quiet_s - 0.6) * 100, canceller.stats.quiet_frames
    quiet = slice(RATE, (quiet_s - 1) * RATE)
    np.testing.assert_array_equal(clean[quiet], near[quiet])
    # Her echo is removed as well as without the skipping.
    settled = slice((quiet_s + 2) * RATE, far.size * RATE // far_rate)
    erle = db(float(np.dot(near[settled], near[settled])) / max(float(np.dot(clean[settled], clean[settled])), 1e-12))
    assert erle > 30, erle


def test_the_users_words_over_her_voice_survive_and_hers_do_not(tmp_path, her_voice, hearing):
    far, far_rate = her_voice
    user, user_rate = read_wav(espeak_wav(tmp_path / "user.wav", "Please stop talking now."))
    user = resample(user, user_rate, RATE)
    near = room(resample(far, far_rate, RATE))
    at = int(5.0 * RATE)  # the user talks over her five seconds in, 6 dB below her echo
    near[at:at + user.size] += 0.5 * user

    raw_heard = words(hearing.transcribe_sync(near[at - RATE // 2:at + user.size + RATE // 2]))
    clean = run_room(EchoCanceller(EchoSettings()), far, far_rate, near)
    clean_heard = words(hearing.transcribe_sync(clean[at - RATE // 2:at + user.size + RATE // 2]))

    assert "stop" not in raw_heard and "parks" in raw_heard  # her voice drowns the user's ...
    # ... not once cleaned: the user's words come through (AEC3 attenuates double talk ~6 dB, so
    # the last word may be misheard on some CPUs) and none of hers.
    assert clean_heard[:3] == ["please", "stop", "talking"] and "parks" not in clean_heard, clean_heard


def test_on_a_headset_the_users_words_over_her_first_line_survive(tmp_path, her_voice, hearing):
    # The microphone hears none of her (a headset: only its own faint hiss). A fresh AEC3
    # suppresses the microphone while she speaks until it has heard seconds of her, so the
    # user talking over her first second would have been lost.
    far, far_rate = her_voice
    user, user_rate = read_wav(espeak_wav(tmp_path / "user.wav", "Please stop talking now."))
    user = resample(user, user_rate, RATE)
    near = (0.0003 * np.random.default_rng(2).standard_normal(far.size * RATE // far_rate)).astype(np.float32)
    at = 2 * RATE  # two seconds into her first line
    near[at:at + user.size] += 0.5 * user
    canceller = EchoCanceller(EchoSettings())

    clean = run_room(canceller, far, far_rate, near)

    assert not canceller.hears_her
    heard = words(hearing.transcribe_sync(clean[at - RATE // 2:at + user.size + RATE // 2]))
    assert heard == ["please", "stop", "talking", "now"], heard


def test_a_deep_speaker_buffer_is_paired_by_its_timestamps_not_by_arrival(her_voice):
    # The speaker's blocks are handed over 600 ms before they sound (a deep sound-server
    # buffer): pairing by DAC time keeps the module's own delay at the room's 60 ms.
    far, far_rate = her_voice
    near = room(resample(far, far_rate, RATE))
    paired = EchoCanceller(EchoSettings())
    clean = run_room(paired, far, far_rate, near, output_lead_s=0.6)
    settled = slice(2 * RATE, far.size * RATE // far_rate)
    assert db(np.dot(near[settled], near[settled]) / np.dot(clean[settled], clean[settled])) > 30
    assert paired.stats.lead_ms >= 550  # the far end really had arrived that far ahead


def test_switching_echo_cancellation_off_passes_her_echo_through():
    rng = np.random.default_rng(1)
    far = (0.2 * rng.standard_normal(4 * RATE)).astype(np.float32)
    near = room(far)
    canceller = EchoCanceller(EchoSettings(echo_cancellation=False, high_pass_filter=False))
    clean = run_room(canceller, far, RATE, near)
    assert not canceller.settings.active
    np.testing.assert_allclose(clean[:near.size - RATE], near[:clean.size][:near.size - RATE], atol=1e-6)
    canceller.configure(EchoSettings())
    assert canceller.settings.echo_cancellation


def test_a_timeline_counts_samples_through_jitter_and_moves_only_when_settled_stamps_disagree():
    line = Timeline()
    block = np.ones(160, dtype=np.float32)
    t = 10.0
    for i in range(2 * SETTLE_BLOCKS):  # 4 ms of jitter either way: appended where the last ended
        line.push(block, RATE, t + i * 0.01 + (0.004 if i % 2 else -0.004 if i else 0.0))
    assert (line.start, line.end, line.runs, line.moves) == (160_000, 160_000 + 2 * SETTLE_BLOCKS * 160, 1, 0)
    # The device ran dry and restarted with a refill burst whose stamps barely advance ...
    t = 10.0 + 2 * SETTLE_BLOCKS * 0.01 + 0.5
    line.push(block, RATE, t, xrun=True)
    for i in range(3):
        line.push(block, RATE, t + 0.0004 * i, xrun=True)
    assert line.moves == 0  # ... those stamps are not believed
    # ... then steady blocks say the stream really is 0.5 s later than counted: it moves there.
    counted = line.end
    for i in range(2 * SETTLE_BLOCKS):
        line.push(block, RATE, t + 0.04 + i * 0.01)
    assert line.moves == 1 and line.end == counted + 2 * SETTLE_BLOCKS * 160 + 8_000
    line.push(block, RATE, t + 5.0)  # seconds away: the device restarted, a new run begins there
    assert line.runs == 2 and line.start == round((t + 5.0) * RATE)


def test_silence_the_stamps_insert_into_the_microphone_stream_is_never_handed_to_the_ear():
    """After an overflow the settled stamps may say the microphone is 0.5 s later than counted:
    its timeline keeps that time, but the ear gets only what was heard, so a question is not
    cut in two by half a second of silence nobody heard."""
    canceller = EchoCanceller(EchoSettings(echo_cancellation=False, high_pass_filter=False))
    block = np.full(160, 0.1, dtype=np.float32)
    t, given, handed = 10.0, 0, []
    for i in range(2 * SETTLE_BLOCKS):
        handed.append(canceller.capture(block, RATE, t + i * 0.01))
        given += block.size
    t += 2 * SETTLE_BLOCKS * 0.01 + 0.5
    handed.append(canceller.capture(block, RATE, t, xrun=True))
    given += block.size
    for i in range(1, 3 * SETTLE_BLOCKS):
        handed.append(canceller.capture(block, RATE, t + i * 0.01))
        given += block.size
    assert canceller._near.moves == 1  # the timeline did move by the half second ...
    out = np.concatenate(handed)
    assert given - APM_FRAME <= out.size <= given  # ... and none of it reached the ear
    assert np.min(np.abs(out)) > 0.05


def test_the_worker_cleans_on_its_own_thread_and_hands_out_every_sample(her_voice):
    import threading

    far, far_rate = her_voice
    near = room(resample(far, far_rate, RATE))[:4 * RATE]
    got: list[np.ndarray] = []
    threads: set[str] = set()
    done = threading.Event()

    def deliver(block: np.ndarray) -> None:
        threads.add(threading.current_thread().name)
        got.append(block)
        if sum(b.size for b in got) >= near.size - 512:
            done.set()

    worker = EchoWorker(EchoSettings(), deliver=deliver)
    try:
        for i in range(0, near.size - 511, 512):
            t = 50.0 + i / RATE
            worker.render(resample(far, far_rate, RATE)[i:i + 512], RATE, t)
            worker.capture(near[i:i + 512], RATE, t)
        assert done.wait(30)
        assert worker.cancelling
        assert worker.stats().frames >= (near.size - 512) // 160
    finally:
        worker.close()
    assert threads == {"echo-canceller"}
    assert not worker.cancelling


def feed_worker(worker: EchoWorker, far: np.ndarray, far_rate: int, near: np.ndarray, *,
                output_lead_s: float, clock0: float = 2000.0) -> None:
    """run_room's two streams, in arrival order, through the worker (the callbacks' side)."""
    out_block, in_block = int(0.02 * far_rate), 512
    total_s = near.size / RATE
    far = np.concatenate([far, np.zeros(int((total_s + 1) * far_rate) - far.size, dtype=np.float32)])
    events = [(clock0 + i / far_rate - output_lead_s, 0, i) for i in range(0, far.size - out_block, out_block)]
    events += [(clock0 + (i + in_block) / RATE + 0.04, 1, i) for i in range(0, near.size - in_block + 1, in_block)]
    for _arrival, kind, i in sorted(events):
        if kind == 0:
            worker.render(far[i:i + out_block], far_rate, clock0 + i / far_rate)
        else:
            worker.capture(near[i:i + in_block], RATE, clock0 + i / RATE)


def delivered(size: int):
    """A deliver callable gathering blocks, and an event set once `size` samples came."""
    import threading

    got: list[np.ndarray] = []
    done = threading.Event()

    def deliver(block: np.ndarray) -> None:
        got.append(block)
        if sum(b.size for b in got) >= size:
            done.set()

    return got, done, deliver


def test_a_speaker_handing_her_voice_over_late_is_waited_for_and_her_echo_is_still_removed(her_voice, monkeypatch):
    """Beside busy cores her speaker's thread hands a block over after the microphone's block of
    the same moment (here 100 ms after it sounds): the microphone waits for it while she speaks.
    Paired with silence instead, her echo came through at 5-17 dB removed."""
    import companion.voice.sound.echo_worker as echo_worker

    monkeypatch.setattr(echo_worker, "FAR_WAIT_S", 30.0)  # the wait ends by the far end, never by time
    far, far_rate = her_voice
    near = room(resample(far, far_rate, RATE))[:far.size * RATE // far_rate]
    got, done, deliver = delivered(near.size - 512)
    worker = EchoWorker(EchoSettings(), deliver=deliver)
    try:
        worker.expect_sound()  # as her speaker's play() does when a line is queued
        feed_worker(worker, far, far_rate, near, output_lead_s=-0.1)
        assert done.wait(30)
    finally:
        worker.close()
    clean = np.concatenate(got)
    settled = slice(2 * RATE, clean.size)
    assert db(float(np.dot(near[settled], near[settled])) / float(np.dot(clean[settled], clean[settled]))) > 30


def test_while_she_is_quiet_the_microphone_never_waits_for_her_speaker(monkeypatch):
    import companion.voice.sound.echo_worker as echo_worker

    monkeypatch.setattr(echo_worker, "FAR_WAIT_S", 60.0)  # a wait would outlast the test
    rng = np.random.default_rng(5)
    near = (0.1 * rng.standard_normal(RATE)).astype(np.float32)
    got, done, deliver = delivered(near.size - 512)
    worker = EchoWorker(EchoSettings(), deliver=deliver)
    try:
        worker.render(np.zeros(320, dtype=np.float32), RATE, 100.0, silent=True)  # her speaker idles
        for i in range(0, near.size - 511, 512):
            worker.capture(near[i:i + 512], RATE, 100.0 + i / RATE)
        assert done.wait(10)
    finally:
        worker.close()


def test_a_line_whose_sound_never_comes_holds_the_microphone_only_briefly_and_loses_nothing(monkeypatch):
    """A line queued and then stopped before her speaker played it (or a speaker gone): the
    microphone waits FAR_WAIT_S for it at most, then every sample goes on."""
    import companion.voice.sound.echo_worker as echo_worker

    monkeypatch.setattr(echo_worker, "FAR_WAIT_S", 0.05)
    rng = np.random.default_rng(6)
    near = (0.1 * rng.standard_normal(RATE)).astype(np.float32)
    got, done, deliver = delivered(near.size - 512)
    worker = EchoWorker(EchoSettings(), deliver=deliver)
    try:
        worker.render(np.zeros(320, dtype=np.float32), RATE, 100.0)  # the start of a line, then nothing
        worker.expect_sound()
        for i in range(0, near.size - 511, 512):
            worker.capture(near[i:i + 512], RATE, 100.0 + i / RATE)
        assert done.wait(10)
    finally:
        worker.close()
    fed = (near.size - 511 + 511) // 512 * 512
    assert sum(b.size for b in got) == fed // APM_FRAME * APM_FRAME


def test_her_echo_counts_as_removed_only_once_the_canceller_has_heard_a_second_of_her(her_voice):
    far, far_rate = her_voice
    near = room(resample(far, far_rate, RATE))
    early = EchoCanceller(EchoSettings())
    run_room(early, far[:far_rate // 2], far_rate, near[:RATE // 2])  # her first half second
    assert early.stats.echo_frames > 20 and not early.stats.settled
    learned = EchoCanceller(EchoSettings())
    run_room(learned, far, far_rate, near)
    assert learned.stats.settled
    assert EchoCanceller(EchoSettings(echo_cancellation=False)).stats.settled  # nothing to learn


def test_while_her_canceller_is_still_learning_the_barge_in_floor_allows_for_her_whole_echo():
    from companion.voice.sound.audio import NullSink
    from companion.voice.turns.barge_in import UNSETTLED_ECHO_RATIO, BargeInWatch

    class LearningSink(NullSink):
        settled = False

        def echo_settled(self) -> bool:
            return self.settled

    sink = LearningSink()
    watch = BargeInWatch(sink)
    sink._report(0.2)  # her level as she plays
    assert watch.floor(0.01, 0.05) == pytest.approx(UNSETTLED_ECHO_RATIO * 0.2)
    sink.settled = True
    assert watch.floor(0.01, 0.05) == pytest.approx(0.05 * 0.2)
