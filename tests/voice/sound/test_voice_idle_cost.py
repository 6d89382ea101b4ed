"""Waiting for a call costs little (issue 56 item 4): a quiet room while her speaker plays
silence passes the echo canceller in one step, exactly as frame by frame, with the real WebRTC
canceller."""

from __future__ import annotations

import numpy as np

from companion.voice.sound.audio import resample
from companion.voice.sound.echo_canceller import APM_FRAME, EchoCanceller
from companion.voice.sound.frames import SAMPLE_RATE


def test_a_quiet_room_while_her_speaker_is_silent_passes_the_canceller_exactly_as_frame_by_frame():
    rng = np.random.default_rng(56)
    quiet = (rng.normal(0, 1e-4, SAMPLE_RATE * 2)).astype(np.float32)  # -80 dBFS room
    voice = (0.1 * np.sin(2 * np.pi * 220 * np.arange(SAMPLE_RATE) / SAMPLE_RATE)).astype(np.float32)
    near = np.concatenate([quiet, voice, quiet])
    far = (0.2 * np.sin(2 * np.pi * 330 * np.arange(SAMPLE_RATE // 2) / SAMPLE_RATE)).astype(np.float32)

    processed = []

    def run(shortcut: bool) -> tuple[np.ndarray, int, int]:
        canceller = EchoCanceller()
        if not shortcut:
            canceller._pass_quiet = lambda: None
        else:
            one_by_one = canceller._process
            canceller._process = lambda frame: (processed.append(1), one_by_one(frame))[1]
        out, at = [], 50.0
        silence = np.zeros(441, np.float32)
        far_at = at + 0.05  # her speaker runs 50 ms ahead of the microphone
        canceller.render(resample(far, SAMPLE_RATE, 22_050), 22_050, far_at, exact=True)  # she spoke, then silence
        far_at += far.size / SAMPLE_RATE
        for start in range(0, near.size, 320):
            for _ in range(2):
                canceller.render(silence, 22_050, far_at, exact=True)
                far_at += 0.02
            out.append(canceller.capture(near[start:start + 320], SAMPLE_RATE, at + start / SAMPLE_RATE, exact=True))
        canceller.release()
        return np.concatenate(out), canceller.stats.frames, canceller.stats.quiet_frames

    fast, frames, quiet_frames = run(True)
    slow, slow_frames, slow_quiet = run(False)
    assert (frames, quiet_frames) == (slow_frames, slow_quiet) and quiet_frames > frames // 2
    assert len(processed) < frames - quiet_frames + 60  # the quiet frames skipped _process, all but the first
    assert fast.size == slow.size == near.size // APM_FRAME * APM_FRAME
    assert np.array_equal(fast, slow)
