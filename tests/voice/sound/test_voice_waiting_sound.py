"""While she waits for a call her sound wakes the machine less often (issue 56: waiting costs
≤ 5 % of a core): the microphone comes from the server in 100 ms fragments until someone speaks,
her speaker is asked for audio half as often, and her speaker's silence reaches the echo
canceller in batches, while her voice reaches it at once. On the private PulseAudio, real streams."""

from __future__ import annotations

import numpy as np

from companion.voice.sound.echo_worker import EchoWorker
from companion.voice.sound.pulse_devices import PulseSink, PulseSource

RATE = 22_050


class _CountedMicrophone(PulseSource):
    """The real microphone, counting the blocks the server's fragments make."""

    blocks = 0

    def _heard(self, block, adc_time, xrun, *, exact=False) -> None:
        self.blocks += 1
        super()._heard(block, adc_time, xrun, exact=exact)


async def _blocks_per_frame(source: _CountedMicrophone, frames: int) -> float:
    await source.read()  # a fragment in the old size may still be on its way
    before = source.blocks
    for _ in range(frames):
        assert await source.read() is not None
    return (source.blocks - before) / frames


async def test_waiting_for_a_call_the_microphone_comes_in_fragments_of_100_ms_and_of_20_once_someone_speaks(
        pulse_audio):
    echo = EchoWorker()
    source = _CountedMicrophone("mic", echo=echo)
    try:
        busy = await _blocks_per_frame(source, 40)  # 32 ms frames
        source.set_busy(False)
        await _blocks_per_frame(source, 8)
        idle = await _blocks_per_frame(source, 40)
        source.set_busy(True)
        await _blocks_per_frame(source, 8)
        busy_again = await _blocks_per_frame(source, 40)
    finally:
        source.close()
        echo.close()
    assert busy >= 0.8 and busy_again >= 0.8  # a block per 20-32 ms fragment
    assert idle <= 0.45  # a block per ~100 ms: three frames each
    assert echo.stats().xruns == 0  # no audio lost at either switch


class _CountedSpeaker(PulseSink):
    """The real speaker, counting the server's requests; `written(seconds)` is a future done once
    that much more audio has been handed to the server."""

    requests = _handed = _target = 0
    _waiting = None

    def _requested(self, count: int, at: float, xrun: bool) -> np.ndarray:
        self.requests += 1
        out = super()._requested(count, at, xrun)
        self._handed += out.size
        if self._waiting is not None and self._handed >= self._target:
            waiting, self._waiting = self._waiting, None
            self._loop.call_soon_threadsafe(lambda: waiting.done() or waiting.set_result(self.requests))
        return out

    def written(self, seconds: float):
        self._handed, self._target = 0, int(self.rate * seconds)
        self._waiting = self._loop.create_future()
        return self._waiting


async def test_waiting_for_a_call_her_speaker_is_asked_for_audio_half_as_often(pulse_audio):
    echo = EchoWorker()
    sink = _CountedSpeaker("speaker", preferred_rate=RATE, echo=echo)
    try:
        asked = sink.requests
        busy = await sink.written(1.0) - asked  # busy: the session's default until it says otherwise
        sink.set_busy(False)
        await sink.written(0.1)
        asked = sink.requests
        idle = await sink.written(1.0) - asked
        played = await sink.play(np.full(int(RATE * 0.3), 0.1, dtype=np.float32), RATE)
    finally:
        await sink.close()
        echo.close()
    assert busy >= 40 and idle <= 0.6 * busy, (busy, idle)  # 50 requests a second here, then 25
    assert played  # a line she says while idle plays as ever


def test_her_speakers_silence_reaches_the_canceller_100_ms_at_a_time_and_her_voice_at_once():
    echo = EchoWorker()
    block = RATE // 100
    for i in range(100):  # a second of silence, 10 ms at a time
        echo.render(np.zeros(block, dtype=np.float32), RATE, 10.0 + i / 100, exact=True, silent=True)
    voice = np.full(block, 0.1, dtype=np.float32)
    for i in range(10):  # then her voice
        echo.render(voice, RATE, 11.0 + i / 100, exact=True)
    echo.close()  # the thread takes everything queued, then ends
    assert echo.far_blocks == 10 + 10  # ten batches of silence, then each block of her voice
    assert echo.far_samples == 110 * block  # not a sample lost or added
