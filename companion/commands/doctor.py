"""`companion doctor`: check everything she needs and print a fix for each failure."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-brain", action="store_true", help="skip contacting the brain")


def run(args: argparse.Namespace, config) -> int:
    from companion.doctor import all_checks
    from companion.doctor.report import can_talk, environment_color, format_report, run_checks

    results = run_checks(all_checks(config, include_brain=not args.no_brain))
    print(format_report(results, color=environment_color()))
    return 0 if can_talk(results) else 1
