"""`companion listen`: the voice loop on a WAV as if spoken; what she says goes to another WAV."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from companion.config import RunConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in", dest="input", type=Path, required=True, metavar="IN.wav",
                        help="what you say (16-bit PCM WAV, any rate)")
    parser.add_argument("--out", dest="output", type=Path, required=True, metavar="OUT.wav",
                        help="where everything she says is written, with the silences between")
    parser.add_argument("--realtime", action="store_true",
                        help="play the file at speaking pace (you can interrupt her) instead of as fast as possible")
    parser.add_argument("--listening", choices=("always", "called", "only_me", "muted"),
                        help="the listening mode for this run (default: the one in Settings, When called "
                             "unless changed); in "
                             "'called' only her name, the wake word or a follow-up starts a turn")
    parser.add_argument("--latency", action="store_true",
                        help="print each turn's stage timings to stderr (meaningful with --realtime)")


def run(args: argparse.Namespace, config: RunConfig) -> int:
    try:
        return asyncio.run(_listen(args, config))
    except KeyboardInterrupt:
        return 130


def heard_printer(out, errors=None):
    """Prints `[heard] …` for each utterance she transcribed, and `[error] …` (what the window's
    banner would say) to `errors`."""
    from companion.events import ErrorOccurred, UserHeard

    def show(event) -> None:
        if isinstance(event, UserHeard) and event.spoken:
            print(f"[heard] {event.text}", file=out, flush=True)
        elif isinstance(event, ErrorOccurred) and errors is not None:
            print(f"[error] {event.sentence}", file=errors, flush=True)

    return show


async def _listen(args: argparse.Namespace, config: RunConfig) -> int:
    from companion.commands.chat import Transcript
    from companion.errors import CompanionError
    from companion.events import EventBus
    from companion.runtime import Companion
    from companion.voice.brain_port import CompanionBrain
    from companion.voice.factory import build_voice
    from companion.voice.models.download import progress_bar
    from companion.voice.session import VoiceSession
    from companion.voice.sound.audio import WavSink, WavSource

    bus = EventBus()
    bus.subscribe(heard_printer(sys.stdout, sys.stderr))
    bus.subscribe(Transcript(sys.stdout, verbose=bool(getattr(args, "verbose", False))))
    started = time.monotonic()
    sinks: list[WavSink] = []

    def make_sink(rate: int) -> WavSink:
        # The conversation's clock: the file's own time, or the wall clock when paced in real time.
        clock = (lambda: time.monotonic() - started) if args.realtime else (lambda: source.position_s)
        sinks.append(WavSink(clock, rate=rate, realtime=args.realtime))
        return sinks[0]

    try:
        source = WavSource(args.input, realtime=args.realtime)
    except CompanionError as exc:
        print(f"companion: {exc.sentence}", file=sys.stderr, flush=True)
        return 1
    companion = Companion(config, bus)
    try:
        await companion.start()
    except Exception as exc:
        print(f"companion: I couldn't start: {exc}", file=sys.stderr, flush=True)
        return 1
    # Her personality's voice, pace, variation and pitch, unless Settings names its own (as `voice`).
    voice = companion.voice_settings(config.settings.voice)
    try:
        parts = await build_voice(voice, config.paths.models_dir, progress=progress_bar(),
                                  source=source, make_sink=make_sink, bus=bus)
    except CompanionError as exc:
        print(f"companion: {exc.sentence}", file=sys.stderr, flush=True)
        await companion.close()
        return 1
    [sink] = sinks
    if getattr(args, "listening", None):
        voice = voice.with_mode(args.listening)
    session = VoiceSession.from_parts(parts, brain=CompanionBrain(companion), bus=bus, voice=voice)
    for line in session.servers():
        print(f"companion: {line}", file=sys.stderr, flush=True)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    try:
        sink.write(args.output)
    except OSError as exc:
        print(f"companion: I couldn't write {args.output} ({exc.strerror or exc}).", file=sys.stderr)
        return 1
    if args.latency:
        for turn in session.loop.latencies:
            print(f"[latency] {turn.heard}: {turn.summary()}", file=sys.stderr, flush=True)
    if not session.loop.heard and session.loop.calling.verdicts:
        hint = (" Start with my name or the wake word, or run with --listening always."
                if voice.mode == "called" else "")
        print(f"companion: nobody called me in that file ({voice.mode} mode): I answered nothing.{hint}",
              file=sys.stderr, flush=True)
    elif not session.loop.heard:
        print("companion: I didn't hear any speech in that file.", file=sys.stderr, flush=True)
    return 0
