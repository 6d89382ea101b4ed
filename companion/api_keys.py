"""The brain's API key in the system keyring, one per brain URL, with a plain fallback.

Order: `brain.api_key` in settings.toml, then COMPANION_API_KEY / OPENAI_API_KEY, then the
keyring (where the Settings dialog stores it). Looking in the keyring is slow (~0.2 s) and
may ask the desktop to unlock it, so front-ends call `with_api_key` off any UI thread.

When no keyring is available (a bare server, a container) the key stays in settings.toml,
which is written with owner-only permissions; the Settings dialog says which one is used.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace

from companion.config import Settings

log = logging.getLogger(__name__)

SERVICE = "companion"


def keyring_name() -> str | None:
    """The usable system keyring's name, or None when there is none."""
    import keyring  # finding the backends takes ~0.2 s: only when a key is wanted

    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken keyring configuration must not stop the dialog
        log.warning("the keyring could not be loaded", exc_info=True)
        return None
    if getattr(backend, "priority", 0) <= 0:
        return None  # keyring's "fail" and "null" backends
    return getattr(backend, "name", type(backend).__name__)


def load_api_key(base_url: str) -> str:
    """The key saved for `base_url`, or "" when none (or no keyring)."""
    if keyring_name() is None:
        return ""
    import keyring
    from keyring.errors import KeyringError

    try:
        return keyring.get_password(SERVICE, base_url) or ""
    except KeyringError:
        log.warning("could not read the API key from the keyring", exc_info=True)
        return ""


def store_api_key(base_url: str, key: str) -> bool:
    """Save (or with "" delete) the key for `base_url`; False when no keyring could take it."""
    if keyring_name() is None:
        return False
    import keyring
    from keyring.errors import KeyringError

    try:
        if key:
            keyring.set_password(SERVICE, base_url, key)
        elif keyring.get_password(SERVICE, base_url) is not None:
            keyring.delete_password(SERVICE, base_url)
        return True
    except KeyringError:
        log.warning("could not save the API key in the keyring", exc_info=True)
        return False


def with_api_key(settings: Settings) -> Settings:
    """The settings to run with: the keyring's key when neither the file nor the environment has one."""
    from companion.brain.client import API_KEY_VARIABLES

    if settings.brain.api_key or any(os.environ.get(name) for name in API_KEY_VARIABLES):
        return settings
    key = load_api_key(settings.brain.base_url)
    return replace(settings, brain=replace(settings.brain, api_key=key)) if key else settings
