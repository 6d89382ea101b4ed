"""`companion voice` (being built; see the open issue for this mode)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace, config) -> int:
    print("companion: this mode is not built yet.")
    return 2
