"""The audio path's own latency: a sound into her microphone → a sound out of her speaker, by a
program that does nothing else, on the same private PulseAudio and recording as `turn_taking`.

The microphone callback (the block size her ear uses) sees a click and the speaker callback
(the block size her sink uses) starts a tone in its next block: no VAD, no model, no event
loop. What it measures is the part of any black-box voice-to-voice number that belongs to the
sound system and its buffers; a reply can never come sooner than this after the user's sound
ends. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from audio_env import sound_server  # noqa: E402
from e2e_support import Stage, read_stereo, voiced_spans  # noqa: E402

from companion.voice.sound.audio import LEVEL_BLOCK_S, write_wav  # noqa: E402
from companion.voice.sound.frames import FRAME_SAMPLES  # noqa: E402

MIC_RATE, SPEAKER_RATE = 16_000, 22_050
CLICK_LEVEL = 0.2
"""Peak the microphone callback reacts to (the click is played at 0.6)."""


class Reflex:
    """A click heard in a microphone block starts a tone in the speaker's next block."""

    def __init__(self) -> None:
        import sounddevice as sd

        self.heard = threading.Event()
        self._armed = True
        self._tone = (0.5 * np.sin(2 * np.pi * 440 * np.arange(SPEAKER_RATE // 2) / SPEAKER_RATE)).astype(np.float32)
        self._position: int | None = None
        self.mic = sd.InputStream(samplerate=MIC_RATE, channels=1, dtype="float32", blocksize=FRAME_SAMPLES,
                                  callback=self._listen)
        self.speaker = sd.OutputStream(samplerate=SPEAKER_RATE, channels=1, dtype="float32",
                                       blocksize=int(SPEAKER_RATE * LEVEL_BLOCK_S), callback=self._play)
        self.mic.start()
        self.speaker.start()

    def arm(self) -> None:
        self.heard.clear()
        self._position = None
        self._armed = True

    def _listen(self, indata, frames, time_info, status) -> None:
        if self._armed and np.abs(indata).max() > CLICK_LEVEL:
            self._armed = False
            self.heard.set()

    def _play(self, outdata, frames, time_info, status) -> None:
        outdata[:] = 0
        if self.heard.is_set() and self._position is None:
            self._position = 0
        if self._position is not None and self._position < self._tone.size:
            take = min(frames, self._tone.size - self._position)
            outdata[:take, 0] = self._tone[self._position:self._position + take]
            self._position += take

    def close(self) -> None:
        for stream in (self.mic, self.speaker):
            stream.stop()
            stream.close()


def measure_on(pulse, folder: Path, rounds: int) -> tuple[list[float | None], dict]:
    """Each round's click → tone delay on the witness, and what PortAudio says of its streams."""
    stage = Stage(pulse).start()
    click = np.zeros(MIC_RATE, dtype=np.float32)
    click[1000:2600] = 0.6 * np.sin(2 * np.pi * 300 * np.arange(1600) / MIC_RATE)
    write_wav(folder / "click.wav", click, MIC_RATE)
    reflex = Reflex()
    delays: list[float | None] = []
    try:
        time.sleep(1.5)  # PortAudio's first callbacks
        for index in range(rounds):
            reflex.arm()
            witness = folder / f"round{index}.wav"
            recorder = stage.record(witness)
            time.sleep(0.5)
            stage.say(folder / "click.wav").wait()
            time.sleep(1.0)
            recorder.send_signal(signal.SIGINT)
            recorder.wait(10)
            tone, user = read_stereo(witness)
            said, answered = voiced_spans(user, min_gap_s=0.3), voiced_spans(tone, min_gap_s=0.3)
            delays.append(round((answered[0][0] - said[0][0]) * 1000, 1) if said and answered else None)
        reported = {"microphone_ms": round(reflex.mic.latency * 1000, 1),
                    "speaker_ms": round(reflex.speaker.latency * 1000, 1)}
    finally:
        reflex.close()
        stage.stop()
    return delays, reported


def measure(rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with sound_server(folder / "pulse") as pulse:
            delays, reported = measure_on(pulse, folder, rounds)
    measured = [d for d in delays if d is not None]
    return {
        "rounds": rounds,
        "click_onset_to_tone_onset_ms": {
            "median": round(statistics.median(measured), 1) if measured else None,
            "min": min(measured, default=None), "max": max(measured, default=None), "each": delays,
        },
        "portaudio_reported_latency": reported,
        "blocks_ms": {"microphone": round(FRAME_SAMPLES / MIC_RATE * 1000), "speaker": round(LEVEL_BLOCK_S * 1000)},
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    print(json.dumps(measure(parser.parse_args().rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
