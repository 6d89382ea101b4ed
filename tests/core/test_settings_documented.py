"""docs/settings.md names every key settings.toml can hold: each field of each section's
dataclass in companion/config.py, an MCP server entry's fields, and `personality`."""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import get_type_hints

from companion.config import McpServerSettings, Settings

ROOT = Path(__file__).resolve().parents[2]


def settings_keys() -> list[str]:
    """"section.key" for every key of settings.toml (and "personality", which has no section)."""
    keys = []
    hints = get_type_hints(Settings)
    for section in fields(Settings):
        kind = hints[section.name]
        if not is_dataclass(kind):
            keys.append(section.name)
            continue
        keys += [f"{section.name}.{field.name}" for field in fields(kind)]
    keys += [f"mcp.servers.{field.name}" for field in fields(McpServerSettings)]
    return keys


def test_every_settings_key_in_config_is_named_in_docs_settings_md():
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    # A key in backticks, or a table of entries as `[[mcp.servers]]`.
    named = set(re.findall(r"`([a-z_]+)`", text)) | set(re.findall(r"`\[\[[a-z_]+\.([a-z_]+)\]\]`", text))
    missing = [key for key in settings_keys() if key.rsplit(".", 1)[-1] not in named]
    assert missing == [], f"docs/settings.md does not name: {', '.join(missing)}"
    assert "voice.sound_backend" in settings_keys() and "mcp.servers.timeout_s" in settings_keys()


def test_the_sound_backend_row_gives_each_value_the_config_accepts():
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `sound_backend` |"))
    for value in ("auto", "pulse", "portaudio"):
        assert f'`"{value}"`' in row, value
