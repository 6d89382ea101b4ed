"""Voice latency with hearing and voice on Wyoming servers: the voice_latency benchmark, engines over loopback TCP.

wyoming-faster-whisper (the shipped tiny.en, int8, beam 5, one thread) and wyoming-piper (the
shipped joe-medium voice) run as separate processes on 127.0.0.1, started here; everything else
(the utterances, the scripted brain, the real-time WAV sink, the measurement) is voice_latency's.
The stage timings include each request's round trip. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))
sys.path.insert(0, str(ROOT / "bench"))

from voice_latency import SHORT_SILENCE_MS, measure  # noqa: E402
from wyoming_servers import hearing_server, voice_server  # noqa: E402

from companion.config import VoiceSettings  # noqa: E402
from companion.voice.remote.hearing import WyomingTranscriber  # noqa: E402
from companion.voice.remote.speaking import WyomingSynthesizer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = VoiceSettings().end_of_turn_silence_ms
    parser.add_argument("--silence-ms", type=int, nargs="+", default=sorted({SHORT_SILENCE_MS, default}))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, hearing_server(Path(tmp)) as ears, voice_server(Path(tmp)) as mouth:
        info = {}

        async def engines(voice, _models_dir):
            transcriber, synthesizer = WyomingTranscriber(ears.uri), WyomingSynthesizer(mouth.uri)
            info["hearing"] = (await transcriber.start()).summary()
            info["voice"] = (await synthesizer.start()).summary("voices")
            return transcriber, synthesizer

        results = {f"silence_{ms}ms": asyncio.run(measure(ms, engines)) for ms in args.silence_ms}
        results["servers"] = info
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
