"""The speaker check reads the echo canceller's totals once its thread has caught up with what
the microphone heard: on a busy machine it runs seconds behind, and read at once the check said
"I couldn't play my test line" with the line played and heard."""

from __future__ import annotations

import threading

import numpy as np

from companion.voice.sound.echo_canceller import EchoSettings
from companion.voice.sound.echo_worker import EchoWorker
from companion.voice.speaker_check import check_speakers

RATE = 16_000
BLOCK = 320


class NoiseVoice:
    sample_rate = RATE

    async def synthesize(self, _line: str) -> np.ndarray:
        return np.random.default_rng(1).normal(0, 0.1, RATE).astype(np.float32)  # a second of "her"


class LateMicrophoneSink:
    """Plays into the echo worker at once; the microphone's copy of it (the room: -6 dB) reaches
    the worker only after play() has returned, as on a machine too busy to keep up."""

    def __init__(self, echo: EchoWorker) -> None:
        self.echo = echo
        self.played = threading.Event()
        self.feeder = threading.Thread(target=self._microphone)

    async def play(self, audio: np.ndarray, rate: int) -> None:
        self.audio = audio
        for i in range(0, audio.size, BLOCK):
            self.echo.render(audio[i:i + BLOCK], rate, 10.0 + i / rate, exact=True)
        self.feeder.start()
        self.played.set()

    def _microphone(self) -> None:
        self.played.wait()
        for i in range(0, self.audio.size, BLOCK):
            self.echo.capture(0.5 * self.audio[i:i + BLOCK], RATE, 10.0 + i / RATE, exact=True)


async def test_the_speaker_check_waits_for_the_canceller_to_catch_up_with_the_microphone():
    echo = EchoWorker(EchoSettings(echo_cancellation=False))
    sink = LateMicrophoneSink(echo)
    try:
        check = await check_speakers(echo, sink, NoiseVoice())
    finally:
        sink.feeder.join()
        echo.close()
    assert check.played, check
    assert -8 < check.before_db < -4  # the room's -6 dB
