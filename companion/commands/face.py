"""`companion face`: render her face making one expression (or all of them) to PNG files."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from companion.events import EXPRESSIONS


def _size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d{1,5})[xX](\d{1,5})", text.strip())
    if not match or not all(16 <= int(v) <= 8192 for v in match.groups()):
        raise argparse.ArgumentTypeError(f"size must look like 512x512 (16 to 8192 each), not {text!r}")
    return int(match.group(1)), int(match.group(2))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--expression", default="neutral",
                        help=f"one of: {', '.join(EXPRESSIONS)}, or 'all' for a contact sheet")
    parser.add_argument("--out", type=Path, required=True, help="the PNG file to write")
    # --personality FILE (an option every mode takes) picks the character: that file's face:.
    parser.add_argument("--size", type=_size, default=(512, 512), help="WIDTHxHEIGHT (default 512x512)")


def _character(path: Path | None) -> tuple[str, str | None]:
    """The face a personality file names, or an error sentence."""
    if path is None:
        return "mira", None
    from companion.persona import parse_personality

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return "", f"I can't read the personality file {path}: {getattr(exc, 'strerror', None) or exc}."
    personality, problems = parse_personality(text)
    face_problems = [str(p) for p in problems if "face" in p.message]
    if face_problems:
        return "", f"{path}: {face_problems[0]}."
    return personality.face, None


def run(args: argparse.Namespace, config) -> int:
    name = args.expression
    if name != "all" and name not in EXPRESSIONS:
        print(f"companion face: unknown expression {name!r}; choose one of {', '.join(EXPRESSIONS)} or all.",
              file=sys.stderr)
        return 2
    character, problem = _character(getattr(args, "personality", None))
    if problem:
        print(f"companion face: {problem}", file=sys.stderr)
        return 2
    # Rendering needs no screen: an offscreen Qt platform works on servers and in CI.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from companion.ui.face.pictures import save_face_png

    width, height = args.size
    written = save_face_png(name, width, height, args.out, character=character)
    if written is None:
        print(f"companion face: could not write {args.out}.", file=sys.stderr)
        return 1
    print(f"wrote {args.out} ({written[0]}x{written[1]})")
    return 0
