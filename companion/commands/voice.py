"""`companion voice`: the voice loop on the microphone and speaker, with a console transcript."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from companion.config import RunConfig, VoiceSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list-devices", action="store_true", help="list the sound devices and exit")
    parser.add_argument("--input-device", default=None, help="microphone (name or number); overrides the setting")
    parser.add_argument("--output-device", default=None, help="speaker (name or number); overrides the setting")
    parser.add_argument("--listening", choices=("always", "called", "only_me", "muted"),
                        help="the listening mode for this run (default: the one in Settings, When called "
                             "unless changed); 'always' answers every voice (a headset in a quiet room)")


def run(args: argparse.Namespace, config: RunConfig) -> int:
    if args.list_devices:
        return _list_devices()
    try:
        return asyncio.run(_voice(args, config))
    except KeyboardInterrupt:
        print("\nBye!", flush=True)
        return 130


def ready_line(voice: VoiceSettings, names: tuple[str, ...], microphone: bool) -> str:
    """What she prints once her voice is up: how to talk to her in this listening mode."""
    from companion.voice.addressing.wake import wake_phrase

    if not microphone:
        return "Type to me and press Enter. Ctrl-C quits."
    if voice.mode == "muted":
        return "My microphone is muted (Settings → Voice → Listening): type and press Enter. Ctrl-C quits."
    if voice.mode == "called":
        calls = [f"\u201c{wake_phrase(voice.wake_word)}\u201d"]
        if voice.name_wakes and names:
            calls.insert(0, f"\u201c{names[0]}\u201d")
        return (f"Listening when called: start with {' or '.join(calls)} (--listening always answers "
                "every voice). Or type and press Enter. Ctrl-C quits.")
    return "Listening. Speak, or type and press Enter. Ctrl-C quits."


def _list_devices() -> int:
    from companion.errors import CompanionError
    from companion.voice.sound.devices import list_devices

    try:
        devices = list_devices()
    except CompanionError as exc:
        print(f"companion: {exc.sentence}", file=sys.stderr)
        return 1
    if not devices:
        print("No sound devices found: I can only talk in text here.")
        return 1
    for index, device in enumerate(devices):
        print(f"{index:3d}  {device['name']}  (in {device['max_input_channels']}, out {device['max_output_channels']})")
    return 0


async def _voice(args: argparse.Namespace, config: RunConfig) -> int:
    from dataclasses import replace

    from companion.commands.chat import Transcript
    from companion.commands.listen import heard_printer
    from companion.errors import CompanionError
    from companion.events import EventBus
    from companion.runtime import Companion
    from companion.tools.context import Channel
    from companion.voice.brain_port import CompanionBrain
    from companion.voice.factory import build_voice
    from companion.voice.models.download import progress_bar
    from companion.voice.session import LISTENING_WATCH, VoiceSession
    from companion.voice.sound.audio import NullSource

    voice = config.settings.voice
    if args.input_device is not None or args.output_device is not None:
        voice = replace(voice, input_device=args.input_device if args.input_device is not None else voice.input_device,
                        output_device=args.output_device if args.output_device is not None else voice.output_device)
    if getattr(args, "listening", None):
        voice = voice.with_mode(args.listening)
    bus = EventBus()
    bus.subscribe(heard_printer(sys.stdout, sys.stderr))
    bus.subscribe(Transcript(sys.stdout, verbose=bool(getattr(args, "verbose", False))))
    companion = Companion(config, bus)
    try:
        await companion.start()
    except Exception as exc:
        print(f"companion: I couldn't start: {exc}", file=sys.stderr, flush=True)
        return 1
    voice = companion.voice_settings(voice)  # her personality's voice: unless Settings names one
    try:
        parts = await build_voice(voice, config.paths.models_dir, progress=progress_bar(), bus=bus)
    except CompanionError as exc:
        print(f"companion: {exc.sentence}", file=sys.stderr, flush=True)
        await companion.close()
        return 1

    for notice in parts.notices:
        print(f"companion: {notice}", file=sys.stderr, flush=True)
    source = parts.source
    brain = CompanionBrain(companion)
    session = VoiceSession.from_parts(parts, brain=brain, bus=bus, voice=voice)
    print(ready_line(voice, brain.names(), not isinstance(source, NullSource)), flush=True)
    asks: list[asyncio.Future] = []

    async def typed_input_ended(pending: list[asyncio.Future]) -> None:
        # Without a microphone, the end of typed input is the end of the conversation.
        if isinstance(source, NullSource):
            await asyncio.gather(*pending, return_exceptions=True)
            await session.loop.wait_until_quiet()
            source.close()

    typed = _typed_lines(
        lambda text: asks.append(asyncio.ensure_future(companion.ask(text, Channel.TEXT))),
        lambda: asks.append(asyncio.ensure_future(typed_input_ended(list(asks)))),
    )
    try:
        await companion.supervisor.spawn(LISTENING_WATCH, session.run)  # a failure is said; she listens again
    finally:
        typed()
        await session.close()
        await companion.close()
    return 0


def _typed_lines(on_line, on_end):
    """Typed lines go to her as text (the way on when there is no microphone). Returns a stop function."""
    loop = asyncio.get_running_loop()
    stream = sys.stdin

    def readable() -> None:
        line = stream.readline()
        if not line:
            loop.remove_reader(stream)
            on_end()
            return
        if line.strip():
            on_line(line.strip())

    try:
        loop.add_reader(stream, readable)
    except (ValueError, OSError, NotImplementedError):
        return lambda: None
    return lambda: loop.remove_reader(stream)
