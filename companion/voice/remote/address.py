"""Where hearing and speaking run: "local", or a Wyoming server's tcp://host:port (no imports beyond the standard library)."""

from __future__ import annotations

from urllib.parse import urlparse

LOCAL = "local"
"""The engine setting for hearing or speaking on this computer."""


def is_remote(setting: str) -> bool:
    return setting.strip() != LOCAL


def check_address(setting: str, name: str) -> None:
    """Raise ValueError with a sentence unless `setting` is "local" or tcp://host:port."""
    if not is_remote(setting):
        return
    parsed = urlparse(setting.strip())
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme != "tcp" or not parsed.hostname or port is None:
        example = "tcp://host:10300" if name == "hearing" else "tcp://host:10200"
        raise ValueError(f'voice.{name} must be "local" or a Wyoming server like {example} (got {setting!r})')
