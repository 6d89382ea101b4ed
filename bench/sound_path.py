"""Her sound path, both backends (straight to the sound server, and PortAudio): prints JSON.

On a private PulseAudio (tests/helpers/audio_env.py), per backend:
- device_path_ms: black-box delay of a pass-through that opens her microphone and speaker as
  she does (frames read from her microphone are played at once on her speaker), measured like
  ../shared/probe/latency_probe.py: a separate process plays tone bursts into the virtual
  microphone and records the virtual speaker with PortAudio, on one clock (burst onset DAC →
  onset ADC); `probe_loop_ms` is that process's own loop (played into the speaker, recorded
  from its monitor); `over_probe_ms` the difference.
- open speakers, one device and two: her voice (espeak-ng) played for `--seconds` through her
  speaker into a room whose loopback brings it back into her microphone (-6 dB, 60 ms); on two
  devices the speaker is a 48 kHz sink of its own. Callback gaps over 200 ms, xruns (as the
  backend reports them), timing jumps, and ERLE over 0.5 s windows of her speech.
`--hogs N` runs N busy loops beside it (the issue's load: 2); the load average is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from audio_env import device_classes, reinitialise_sounddevice, sound_server  # noqa: E402
from open_speakers import Room  # noqa: E402

from companion.voice.sound.audio import read_wav, resample  # noqa: E402
from companion.voice.sound.echo_canceller import db  # noqa: E402
from companion.voice.sound.echo_worker import EchoWorker  # noqa: E402

BACKENDS = ("pulse", "portaudio")
LINES = ("The capital of Australia is Canberra. It was chosen as a compromise between Sydney and "
         "Melbourne, and it is a planned city with many parks and lakes.")
TWO_DEVICES = "module-null-sink sink_name=usb_speaker rate=48000 channels=2"
TWO_DEVICES_LOOP = "module-loopback source=usb_speaker.monitor sink=room_echo latency_msec=60"


# --- the measuring process: tone bursts played and recorded on one PortAudio clock ---------------
def measure(bursts: int) -> dict:
    import sounddevice as sd

    rate, block = 16_000, 640
    tone = (0.5 * np.sin(2 * np.pi * 1000 * np.arange(int(0.2 * rate)) / rate)).astype(np.float32)
    gap = int(0.8 * rate)
    signal = np.concatenate([np.concatenate([tone, np.zeros(gap, np.float32)]) for _ in range(bursts)])
    signal = np.concatenate([np.zeros(rate, np.float32), signal])
    onsets, captured, pos = [], [], [0]

    def play(outdata, frames, t, status):
        chunk = signal[pos[0]:pos[0] + frames]
        outdata[:, 0] = 0
        outdata[:len(chunk), 0] = chunk
        for k in range(bursts):
            start = rate + k * (tone.size + gap)
            if pos[0] <= start < pos[0] + frames:
                onsets.append(t.outputBufferDacTime + (start - pos[0]) / rate)
        pos[0] += frames

    def record(indata, frames, t, status):
        captured.append((t.inputBufferAdcTime, indata[:, 0].copy()))

    with sd.InputStream(samplerate=rate, blocksize=block, latency="high", channels=1, dtype="float32",
                        callback=record), \
            sd.OutputStream(samplerate=rate, blocksize=block, latency="high", channels=1, dtype="float32",
                            callback=play):
        time.sleep(signal.size / rate + 1.5)
    arrivals = []
    for onset in onsets:
        found = None
        for adc0, chunk in captured:
            for k in range(0, chunk.size, 80):  # 5 ms pieces
                at = adc0 + k / rate
                if at > onset - 0.01 and np.sqrt(np.mean(chunk[k:k + 80] ** 2)) > 0.05:
                    found = at
                    break
            if found is not None:
                break
        if found is not None:
            arrivals.append((found - onset) * 1000)
    return {"delays_ms": [round(d, 1) for d in arrivals]}


def her_devices(backend: str) -> tuple:
    """Her microphone and speaker classes; on the server path with --speaker-ms/--mic-ms buffers."""
    microphone, speaker = device_classes(backend)
    if backend != "pulse" or BUFFERS is None:
        return microphone, speaker
    from companion.voice.sound.pulse import BufferAttr

    mic_ms, speaker_ms = BUFFERS
    return (functools.partial(microphone, buffer=BufferAttr(target_ms=mic_ms)),
            functools.partial(speaker, buffer=BufferAttr(target_ms=speaker_ms, request_ms=10, prebuf_ms=10)))


BUFFERS: tuple[float, float] | None = None


def measured(env: dict, sink: str, source: str, bursts: int) -> list[float]:
    done = subprocess.run([sys.executable, __file__, "--measure", str(bursts)], capture_output=True, text=True,
                          env={**env, "PULSE_SINK": sink, "PULSE_SOURCE": source}, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])["delays_ms"]


async def device_path(pulse, backend: str, bursts: int) -> dict:
    """A pass-through on her devices, measured from outside; the measurer's own loop beside it."""
    os.environ.pop("PULSE_SINK", None)
    os.environ.pop("PULSE_SOURCE", None)
    reinitialise_sounddevice()
    microphone, speaker = her_devices(backend)
    source, sink = microphone(), speaker(preferred_rate=22_050)
    playing: set[asyncio.Task] = set()

    async def through() -> None:
        while (frame := await source.read()) is not None:
            task = asyncio.ensure_future(sink.play(frame, 16_000))
            playing.add(task)
            task.add_done_callback(playing.discard)

    running = asyncio.create_task(through())
    try:
        path = await asyncio.to_thread(measured, pulse.client_env(), "micfeed", "speaker.monitor", bursts)
    finally:
        source.close()
        await sink.close()
        await asyncio.gather(running, *playing, return_exceptions=True)
    loop = await asyncio.to_thread(measured, pulse.client_env(), "speaker", "speaker.monitor", bursts)
    med = lambda xs: round(float(np.median(xs)), 1) if xs else None  # noqa: E731
    return {"device_path_ms": med(path), "probe_loop_ms": med(loop),
            "over_probe_ms": round(med(path) - med(loop), 1) if path and loop else None,
            "bursts_heard": [len(path), len(loop)]}


# --- open speakers ----------------------------------------------------------------------------------
def her_voice(folder: Path) -> tuple[np.ndarray, int]:
    wav = folder / "her.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(wav), LINES], check=True, timeout=60)
    audio, rate = read_wav(wav)
    return resample(audio, rate, 22_050), 22_050


async def open_speakers(pulse, backend: str, seconds: float, *, two_devices: bool, voice) -> dict:
    room = Room(pulse).start()
    modules = []
    if two_devices:  # her speaker a device of its own, heard by the room's microphone
        modules.append(pulse.pactl("load-module", *TWO_DEVICES.split()))
        modules.append(pulse.pactl("load-module", *TWO_DEVICES_LOOP.split()))
        pulse.pactl("set-sink-input-volume", _input_of(pulse, modules[-1]), "79%")
        os.environ["PULSE_SINK"] = "usb_speaker"
        pulse.pactl("set-default-sink", "usb_speaker")
    reinitialise_sounddevice()
    echo = EchoWorker()
    microphone, speaker = her_devices(backend)
    sink = speaker(preferred_rate=voice[1], echo=echo)
    source = microphone(echo=echo)
    gaps = {"speaker": [], "microphone": []}
    watched = {"speaker": sink, "microphone": source}

    async def drain() -> None:
        while await source.read() is not None:
            pass

    async def sample_gaps() -> None:  # the longest wait between two callbacks, every 50 ms
        last = {name: 0.0 for name in watched}
        while True:
            await asyncio.sleep(0.05)
            now = time.monotonic()
            for name, device in watched.items():
                if device.last_block_at and device.last_block_at != last[name]:
                    last[name] = device.last_block_at
                elif device.last_block_at and now - device.last_block_at > 0.2:
                    gaps[name].append(now - device.last_block_at)

    reading = asyncio.create_task(drain())
    await asyncio.sleep(3.0)  # past a new stream's first seconds (the server settles them)
    watching = asyncio.create_task(sample_gaps())
    windows, started = [], time.monotonic()
    before = echo.stats()
    try:
        while time.monotonic() - started < seconds:
            playing = asyncio.ensure_future(sink.play(*voice))
            while not playing.done():
                await asyncio.sleep(0.5)
                now = echo.stats()
                if now.echo_frames - before.echo_frames >= 25:
                    windows.append((now.echo_frames - before.echo_frames,
                                    db((now.raw_energy - before.raw_energy) / max(now.clean_energy - before.clean_energy,
                                                                                  1e-12))))
                before = now
            await sink.play(np.zeros(voice[1] // 2, np.float32), voice[1])
    finally:
        watching.cancel()
        stats = echo.stats()
        source.close()
        await sink.close()
        reading.cancel()
        echo.close()
        os.environ.pop("PULSE_SINK", None)
        for module in reversed(modules):
            pulse.pactl("unload-module", module)
        room.stop()
    spoken = sum(n for n, _ in windows)
    over_18 = sum(n for n, erle in windows if erle >= 18)
    return {"seconds": round(time.monotonic() - started, 1),
            "gaps_over_200ms": {k: [round(g, 2) for g in _runs(v)] for k, v in gaps.items()},
            "xruns": stats.xruns, "jumps": stats.jumps,
            "erle_db_median": round(float(np.median([e for _, e in windows])), 1) if windows else None,
            "erle_db_p1": round(float(np.percentile([e for _, e in windows], 1)), 1) if windows else None,
            "share_of_speech_at_18db": round(over_18 / spoken, 3) if spoken else None}


def _runs(samples: list[float]) -> list[float]:
    """The longest wait of each run of consecutive gap samples (one gap is sampled many times)."""
    out: list[float] = []
    for g in samples:
        if out and g > out[-1]:
            out[-1] = g
        else:
            out.append(g)
    return out


def _input_of(pulse, module: str) -> str:
    index = None
    for line in pulse.pactl("list", "sink-inputs").splitlines():
        line = line.strip()
        if line.startswith("Sink Input #"):
            index = line.removeprefix("Sink Input #")
        elif line == f"Owner Module: {module}" and index is not None:
            return index
    raise RuntimeError("no loopback sink input")


async def main(args) -> dict:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    result = {"hogs": args.hogs, "backends": {}}
    try:
        with tempfile.TemporaryDirectory() as folder, sound_server(Path(folder) / "pulse") as pulse:
            voice = her_voice(Path(folder))
            for backend in args.backends:
                one = {"load_before": os.getloadavg()[0]}
                one["device_path"] = await device_path(pulse, backend, args.bursts)
                one["one_device"] = await open_speakers(pulse, backend, args.seconds, two_devices=False, voice=voice)
                one["two_devices"] = await open_speakers(pulse, backend, args.seconds, two_devices=True, voice=voice)
                one["load_after"] = round(os.getloadavg()[0], 2)
                result["backends"][backend] = one
                print(json.dumps({backend: one}), file=sys.stderr, flush=True)
    finally:
        for hog in hogs:
            hog.kill()
    return result


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--measure":
        print(json.dumps(measure(int(sys.argv[2]))))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="open-speaker run per backend and room")
    parser.add_argument("--bursts", type=int, default=8)
    parser.add_argument("--hogs", type=int, default=0, help="busy loops beside it")
    parser.add_argument("--mic-ms", type=float, help="the server path's microphone fragment (default: hers)")
    parser.add_argument("--speaker-ms", type=float, help="the server path's speaker target latency")
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    arguments = parser.parse_args()
    if arguments.mic_ms or arguments.speaker_ms:
        from companion.voice.sound.pulse_devices import MICROPHONE_BUFFER, SPEAKER_BUFFER

        BUFFERS = (arguments.mic_ms or MICROPHONE_BUFFER.target_ms, arguments.speaker_ms or SPEAKER_BUFFER.target_ms)
    print(json.dumps(asyncio.run(main(arguments))))  # one line: bench/run_all.py reads the last
