"""The personality's optional `## Thinking lines`: what she says while a spoken answer is slow."""

from __future__ import annotations

from companion.persona import build_system_prompt, parse_personality
from companion.persona.thinking_lines import ThinkingLines

BASE = """---
name: Testa
---
## Personality
Plain.
## How to address the user
As you.
## Emotional rules
Neutral.
## Tool voice patterns
## Quirks
None.
"""


def test_her_thinking_lines_come_from_the_personality_and_stay_out_of_her_instructions():
    personality, problems = parse_personality(
        BASE + '## Thinking lines\nthinking: ["Hmm.", "Wait for it."]\nwaking: Still yawning.\n')
    assert problems == []
    assert personality.thinking == ThinkingLines(thinking=("Hmm.", "Wait for it."), waking=("Still yawning.",))
    assert [personality.thinking.pick(False, n) for n in range(3)] == ["Hmm.", "Wait for it.", "Hmm."]
    assert personality.thinking.pick(True, 0) == "Still yawning."
    assert "Wait for it" not in build_system_prompt(personality)


def test_without_the_section_she_has_default_lines_and_a_wrong_entry_keeps_its_default():
    assert parse_personality(BASE)[0].thinking.pick(False, 0) == "Hmm, let me think."
    personality, problems = parse_personality(BASE + "## Thinking lines\nthinking: [1, 2]\nwaking: Up now.\n")
    assert personality.thinking.thinking == ThinkingLines().thinking
    assert personality.thinking.waking == ("Up now.",)
    assert [p.fatal for p in problems] == [False] and "thinking" in problems[0].message
