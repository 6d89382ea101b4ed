"""Her personality: the markdown file's format, the store that watches it, and the system prompt."""

from companion.persona.document import (
    FACES,
    PATTERN_KEYS,
    REQUIRED_SECTIONS,
    Personality,
    Problem,
    parse_personality,
)
from companion.persona.prompt import build_system_prompt, build_turn_note, with_turn_note
from companion.persona.store import PersonalityStore, shipped_default, shipped_templates

__all__ = [
    "FACES", "PATTERN_KEYS", "REQUIRED_SECTIONS", "Personality", "PersonalityStore", "Problem",
    "build_system_prompt", "build_turn_note", "parse_personality", "shipped_default",
    "shipped_templates", "with_turn_note",
]
