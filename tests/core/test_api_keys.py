"""The brain's API key: settings first, then the environment, then the system keyring."""

from __future__ import annotations

import keyring
import pytest
from keyring.backend import KeyringBackend

from companion.api_keys import load_api_key, store_api_key, with_api_key
from companion.config import Settings, with_overrides

URL = "https://brain.example/v1"


class MemoryKeyring(KeyringBackend):
    """A real keyring backend that keeps passwords in a dict (no desktop service needed)."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.passwords.get((service, username))

    def set_password(self, service, username, password):
        self.passwords[(service, username)] = password

    def delete_password(self, service, username):
        self.passwords.pop((service, username), None)


@pytest.fixture
def memory_keyring(monkeypatch):
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    monkeypatch.delenv("COMPANION_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield backend
    keyring.set_keyring(previous)


def settings_for(url: str = URL, key: str = "") -> Settings:
    return with_overrides(Settings(), brain={"base_url": url, "api_key": key})


def test_a_stored_key_is_used_when_neither_settings_nor_environment_has_one(memory_keyring):
    assert store_api_key(URL, "sk-from-keyring")
    assert with_api_key(settings_for()).brain.api_key == "sk-from-keyring"


def test_keys_are_kept_per_brain_url(memory_keyring):
    store_api_key(URL, "sk-one")
    assert load_api_key("https://other.example/v1") == ""


def test_the_environment_wins_over_the_keyring(memory_keyring, monkeypatch):
    store_api_key(URL, "sk-from-keyring")
    monkeypatch.setenv("COMPANION_API_KEY", "sk-from-env")
    assert with_api_key(settings_for()).brain.api_key == ""  # the client reads the variable


def test_the_settings_file_wins_over_everything(memory_keyring):
    store_api_key(URL, "sk-from-keyring")
    assert with_api_key(settings_for(key="sk-in-file")).brain.api_key == "sk-in-file"


def test_storing_an_empty_key_forgets_it(memory_keyring):
    store_api_key(URL, "sk-one")
    store_api_key(URL, "")
    assert load_api_key(URL) == ""
