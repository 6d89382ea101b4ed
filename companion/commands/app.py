"""`companion` with no mode: open her window (face, captions, voice, settings)."""

from __future__ import annotations

import argparse
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-voice", action="store_true",
                        help="open the window without microphone or speaker (type to her)")


def run(args: argparse.Namespace, config) -> int:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        print("companion: there is no desktop to open my window on (no DISPLAY or WAYLAND_DISPLAY). "
              "Run me from your desktop session, or talk in the terminal with `companion chat`.",
              file=sys.stderr)
        return 2
    from companion.ui.app import run as run_app

    return run_app(config, with_voice=not getattr(args, "no_voice", False))
