"""settings.toml, read and written: a missing file gives the defaults, and a broken one never
stops her: it is set aside as a backup, defaults are used, and `LoadedSettings.notice` says so in
one sentence."""

from __future__ import annotations

import dataclasses
import logging
import os
import tomllib
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from typing import Any, get_type_hints

import tomli_w

from companion.config import Paths, Settings
from companion.paths import atomic_write_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedSettings:
    settings: Settings
    notice: str | None = None
    """A sentence for the user when the file was broken and set aside."""


def _from_dict(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"[{where}] must be a table")
    hints = get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown setting {where}.{sorted(unknown)[0]}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        hint = hints[name]
        if is_dataclass(hint):
            kwargs[name] = _from_dict(hint, value, f"{where}.{name}" if where else name)
            continue
        kwargs[name] = _coerce(hint, value, f"{where}.{name}" if where else name)
    return cls(**kwargs)


def _coerce(hint: Any, value: Any, where: str) -> Any:
    origin = getattr(hint, "__origin__", None)
    if origin is tuple and is_dataclass(hint.__args__[0]):
        if not isinstance(value, list | tuple):
            raise ValueError(f"{where} must be a list of tables")
        return tuple(_from_dict(hint.__args__[0], item, f"{where}[{i}]") for i, item in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise ValueError(f"{where} must be a table of strings")
        return dict(value)
    if origin is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{where} must be a list of strings")
        return tuple(value)
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint in (str, int, bool) and type(value) is hint:
        return value
    raise ValueError(f"{where} must be of type {getattr(hint, '__name__', hint)}")


def settings_from_dict(data: dict[str, Any]) -> Settings:
    """Build Settings from parsed TOML; raises ValueError naming the first bad entry."""
    return _from_dict(Settings, data, "")


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [clean(v) for v in value]
        return value

    return clean(dataclasses.asdict(settings))


def load_settings(paths: Paths) -> LoadedSettings:
    """Read settings.toml; a missing file gives defaults, a broken one is set aside."""
    path = paths.settings_file
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LoadedSettings(Settings())
    try:
        return LoadedSettings(settings_from_dict(tomllib.loads(text)))
    except (tomllib.TOMLDecodeError, ValueError, TypeError, RecursionError) as exc:  # RecursionError: nested deep
        backup = path.with_name(f"{path.stem}.broken-{datetime.now():%Y%m%d-%H%M%S}{path.suffix}")
        os.replace(path, backup)
        log.warning("settings file %s is broken (%s); moved to %s", path, exc, backup)
        return LoadedSettings(
            Settings(),
            notice=f"Your settings file was broken ({exc}), so I set it aside as {backup.name} "
            "and started with the defaults.",
        )


def save_settings(paths: Paths, settings: Settings) -> None:
    """Write settings.toml atomically."""
    atomic_write_text(paths.settings_file, tomli_w.dumps(settings_to_dict(settings)))
