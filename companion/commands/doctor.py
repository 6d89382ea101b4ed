"""`companion doctor`: check everything she needs and print a fix for each failure."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-brain", action="store_true", help="skip contacting the brain")


def run(args: argparse.Namespace, config) -> int:
    from companion import doctor

    results = doctor.run_checks(doctor.all_checks(config, include_brain=not args.no_brain))
    print(doctor.format_report(results, color=doctor.environment_color()))
    return 0 if doctor.can_talk(results) else 1
