"""`companion install-desktop`: her launcher in the applications menu (and autostart), or --uninstall."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--uninstall", action="store_true", help="remove the launcher, its icons and autostart")
    parser.add_argument("--autostart", action=argparse.BooleanOptionalAction, default=None,
                        help="also start her when you log in (saved, as Settings → Desktop does)")


def run(args: argparse.Namespace, config) -> int:
    from companion import desktop_entry

    places = desktop_entry.Places.for_user(config_dir=config.paths.config_dir)  # this profile's autostart
    if args.uninstall:
        removed = desktop_entry.uninstall(places)
        _save_start_at_login(config, False)  # Settings' box is unticked
        print(_removed_sentence(removed, icons_kept=bool(places.other_entries())) if removed
              else "There was no launcher to remove.")
        return 0
    settings = config.settings
    autostart = settings.ui.start_at_login if args.autostart is None else args.autostart
    custom = getattr(args, "config_dir", None)
    command = desktop_entry.launch_command(Path(custom) if custom else None)
    # Before anything is saved: start-at-login saved on would write the same entry later.
    refusal = desktop_entry.launcher_refusal(command)
    if refusal:
        print(f"companion: {refusal}", file=sys.stderr)
        return 1
    _save_start_at_login(config, autostart)
    try:
        written = desktop_entry.install(places, command, _render_icon, autostart=autostart)
    except OSError as exc:
        print(f"companion: I couldn't write the launcher ({exc.strerror or exc}: {exc.filename}).",
              file=sys.stderr)
        return 1
    print(f"Her launcher is in your applications menu: {places.entry}")
    print(f"Icons: {len(desktop_entry.ICON_SIZES)} sizes under {places.icons}")
    print(f"Start at login: {'yes, ' + str(places.autostart_entry) if autostart else 'no'}")
    return 0 if written else 1


def _removed_sentence(removed: list[Path], *, icons_kept: bool) -> str:
    count = f"{len(removed)} file" + ("" if len(removed) == 1 else "s")
    if icons_kept:
        return f"Removed {count}: this profile's launcher and autostart (her icons stay for your other profiles)."
    return f"Removed {count}: the launcher, its icons and autostart."


def _save_start_at_login(config, on: bool) -> None:
    from companion.settings_file import save_settings

    saved = config.saved or config.settings
    if saved.ui.start_at_login != on:
        save_settings(config.paths, replace(saved, ui=replace(saved.ui, start_at_login=on)))


def _render_icon(size: int, path: Path) -> None:
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # painting needs no screen
    from companion.ui.face.pictures import save_icon_png

    if not save_icon_png(size, path):
        raise OSError(f"the icon could not be saved at {path}")
