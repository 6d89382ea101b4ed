"""The `companion` command: the window by default, or a terminal mode.

Each mode lives in companion/commands/<name>.py with `add_arguments(parser)` and
`run(args, config) -> int`; those modules import their heavy parts inside `run`, so
parsing stays quick and Qt is only imported by the modes that draw.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from companion import __version__
from companion.commands import app, chat, doctor, face, install_desktop, listen, voice
from companion.config import Paths, RunConfig, with_overrides
from companion.logs import setup_logging
from companion.memory import limit_heap_arenas
from companion.settings_file import LoadedSettings, load_settings

COMMANDS = {
    "chat": (chat, "talk in the terminal (text only, no audio, no window)"),
    "listen": (listen, "run the voice loop on a WAV file and write her answer to a WAV"),
    "voice": (voice, "run the voice loop on the audio devices with no window"),
    "doctor": (doctor, "check that everything she needs is here, and say how to fix what is not"),
    "face": (face, "render her face to a PNG"),
    "install-desktop": (install_desktop, "put her launcher in the applications menu (and autostart); --uninstall removes it"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="companion", description="A voice-first desktop companion."
    )
    parser.add_argument("--version", action="version", version=f"companion {__version__}")
    add_global_options(parser)
    app.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        add_global_options(command_parser, suppress_defaults=True)
        module.add_arguments(command_parser)
    return parser


def add_global_options(parser: argparse.ArgumentParser, *, suppress_defaults: bool = False) -> None:
    # Subcommands repeat the global options so they work before or after the mode name;
    # SUPPRESS keeps a subcommand's absent option from wiping one given before it.
    default = argparse.SUPPRESS if suppress_defaults else None
    parser.add_argument("--brain-url", default=default, help="OpenAI-compatible base URL")
    parser.add_argument("--model", default=default, help="chat model name")
    parser.add_argument("--config-dir", type=Path, default=default, help="settings folder")
    parser.add_argument("--workspace", type=Path, default=default, help="folder her file tools use")
    parser.add_argument("--personality", type=Path, default=default, help="personality file")
    parser.add_argument("-v", "--verbose", action="store_true", default=default or False)


def load_config(args: argparse.Namespace) -> RunConfig:
    paths = Paths.default(args.config_dir)
    loaded: LoadedSettings = load_settings(paths)
    settings = loaded.settings
    brain: dict[str, str] = {}
    if args.brain_url:
        brain["base_url"] = args.brain_url
    if args.model:
        brain["model"] = args.model
    overrides: dict[str, dict] = {}
    if brain:
        overrides["brain"] = brain
    if args.workspace:
        overrides["tools"] = {"workspace": str(args.workspace.expanduser().resolve())}
    if overrides:
        settings = with_overrides(settings, **overrides)
    if args.personality:
        settings = replace(settings, personality=str(args.personality.expanduser().resolve()))
    return RunConfig(paths=paths, settings=settings, notice=loaded.notice, saved=loaded.settings)


def main(argv: Sequence[str] | None = None) -> int:
    limit_heap_arenas()  # before any thread starts
    parser = build_parser()
    args = parser.parse_args(argv)
    # Traces go to her log file; the terminal gets one line per error (everything with -v).
    setup_logging(Paths.default(args.config_dir).data_dir, verbose=bool(args.verbose))
    try:
        config = load_config(args)
    except ValueError as exc:
        print(f"companion: {exc}", file=sys.stderr)
        return 2
    if config.notice:
        print(f"companion: {config.notice}", file=sys.stderr)
    if args.command:
        # Terminal modes read a key saved by the Settings dialog too; the window looks it up
        # itself, off the Qt thread.
        from companion.api_keys import with_api_key

        config = replace(config, settings=with_api_key(config.settings))
    module = COMMANDS[args.command][0] if args.command else app
    return int(module.run(args, config) or 0)


def entry() -> NoReturn:
    """The `companion` command: main(), then the process ends with its code."""
    exit_process(main())


def exit_process(code: int) -> NoReturn:
    """End the process with `code`, without the interpreter's teardown once her echo canceller's
    native runtime (livekit) is loaded. Its own exit handler disposes the runtime, whose thread
    then forwards a last log line into Python; when the interpreter is being torn down by then,
    that thread is stopped inside Rust code that cannot unwind and the whole process aborts
    (exit 134 and a Rust panic on the terminal, 3 runs in 25 of `companion voice` here beside a
    busy core). Every exit handler still runs, and the output is flushed, before the process ends."""
    if "livekit.rtc" not in sys.modules:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can reach it
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
