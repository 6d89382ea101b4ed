"""The personality file: format, partial tool lines, reloading, and keeping the last good version."""

from __future__ import annotations

from dataclasses import replace

from brain_harness import PLAIN_PERSONALITY, make_config, registry_with, start_companion, tool

from companion.events import ErrorOccurred
from companion.persona import (
    PersonalityStore,
    parse_personality,
    shipped_default,
    shipped_templates,
)
from companion.tools import registry as tool_registry

ECHO_PATTERNS = """echo:
  announce: Custom hello from the file.
"""


def test_every_shipped_template_is_valid_and_they_are_different_characters():
    shipped = tool_registry.Registry()  # not discover(): leave the process-wide registry alone
    shipped.register_modules([*tool_registry.builtin_modules(), *tool_registry.action_modules()])
    names = shipped.tools().keys()
    assert "search_files" in names
    templates = shipped_templates()
    assert {"default", "butler", "gremlin"} <= set(templates)
    characters = set()
    for path in templates.values():
        personality, problems = parse_personality(path.read_text(encoding="utf-8"), names)
        assert problems == [], (path, problems)
        characters.add((personality.name, personality.section("Personality")[:40]))
    assert len(characters) == len(templates)


def test_the_first_run_copies_the_default_into_the_config_dir(tmp_path):
    target = tmp_path / "config" / "personality.md"
    store = PersonalityStore(target, copy_default=True)
    assert target.read_text(encoding="utf-8") == shipped_default().read_text(encoding="utf-8")
    assert store.current.name == "Mira" and store.problems == []


def test_each_problem_is_reported_with_its_line_number():
    text = """---
name: Broken
mood: grumpy
---
## Personality
Grumpy.
## Emotional rules
None.
## Tool voice patterns
echo:
  announce: Hi.
  heartbeat: Still going...
  anounce: typo
ghost_tool:
  complete: Boo.
## Quirks
None.
"""
    _, problems = parse_personality(text, {"echo"})
    found = {(p.line, p.message.split(" (")[0].split(",")[0]) for p in problems}
    assert (3, "unknown key 'mood' in the front matter") in found
    assert (12, "heartbeat for echo must be a list of lines") in found
    assert (13, "unknown key 'anounce' for echo") in found
    assert (14, "unknown tool 'ghost_tool' in Tool voice patterns") in found
    assert (17, "missing section '## How to address the user'") in found
    assert [p.fatal for p in problems if "ghost_tool" in p.message] == [False]


def test_broken_yaml_in_the_patterns_names_its_line():
    text = PLAIN_PERSONALITY.format(patterns="echo:\n  announce: [unclosed\n")
    _, problems = parse_personality(text, {"echo"})
    assert len(problems) == 1 and problems[0].line in (13, 14) and problems[0].fatal


async def test_a_partial_override_takes_the_rest_from_the_module_then_the_generic_line(tmp_path, scripted_brain):
    personality = tmp_path / "mine.md"
    personality.write_text(PLAIN_PERSONALITY.format(patterns=ECHO_PATTERNS), encoding="utf-8")
    scripted_brain.push({"tool_calls": [{"name": "echo", "arguments": {}}]}, {"text": "Done."})
    bare = replace(tool("bare"), complete=tool_registry.GENERIC_COMPLETE)  # a module without COMPLETE
    config = make_config(tmp_path, scripted_brain.url, personality=personality)
    companion, rec = await start_companion(config, registry_with(tool("echo", complete="Echo finished."), bare))
    await companion.ask("echo")
    assert rec.speech() == [("announce", "Custom hello from the file."), ("complete", "Echo finished.")]
    lines = companion.narration_lines()
    assert lines["echo"].announce == "Custom hello from the file."
    assert lines["echo"].heartbeat == ("Still on echo...",)
    assert lines["bare"].complete == tool_registry.GENERIC_COMPLETE
    await companion.close()


async def test_an_edit_is_picked_up_on_the_next_turn_without_a_restart(tmp_path, scripted_brain):
    personality = tmp_path / "mine.md"
    personality.write_text(PLAIN_PERSONALITY.format(patterns=""), encoding="utf-8")
    scripted_brain.push({"text": "One."}, {"text": "Two."})
    config = make_config(tmp_path, scripted_brain.url, personality=personality)
    companion, _ = await start_companion(config, registry_with(tool("echo")))
    await companion.ask("first")
    renamed = PLAIN_PERSONALITY.format(patterns="").replace("name: Testa", "name: Renamed Person")
    personality.write_text(renamed, encoding="utf-8")
    await companion.ask("second")
    first, second = (body["messages"][0]["content"] for body in scripted_brain.bodies)
    assert "You are Testa" in first and "You are Renamed Person" in second
    await companion.close()


async def test_a_broken_edit_keeps_the_last_good_version_and_she_says_what_is_wrong(tmp_path, scripted_brain):
    personality = tmp_path / "mine.md"
    personality.write_text(PLAIN_PERSONALITY.format(patterns=ECHO_PATTERNS), encoding="utf-8")
    scripted_brain.push({"tool_calls": [{"name": "echo", "arguments": {}}]}, {"text": "Fine."})
    config = make_config(tmp_path, scripted_brain.url, personality=personality)
    companion, rec = await start_companion(config, registry_with(tool("echo")))
    broken = PLAIN_PERSONALITY.format(patterns="echo:\n  announce: Broken hello.\n  heartbeat: not a list\n")
    personality.write_text(broken.replace("name: Testa", "name: Oops"), encoding="utf-8")
    await companion.ask("echo")
    assert ("announce", "Custom hello from the file.") in rec.speech()
    assert "You are Testa" in scripted_brain.bodies[0]["messages"][0]["content"]
    [error] = rec.of(ErrorOccurred)
    assert error.stage == "personality" and "line 15: heartbeat for echo must be a list" in error.sentence
    assert [p.line for p in companion.personality.problems] == [15]
    await companion.close()


def test_a_missing_personality_file_falls_back_to_the_default_and_says_so(tmp_path):
    store = PersonalityStore(tmp_path / "nowhere.md")
    assert store.current.name == "Mira"
    assert "does not exist" in store.problem_sentence()


def test_saving_from_the_editor_writes_the_file_and_keeps_a_broken_draft_unapplied(tmp_path):
    path = tmp_path / "mine.md"
    store = PersonalityStore(path, copy_default=True, known_tools=lambda: {"echo"})
    good = PLAIN_PERSONALITY.format(patterns="")
    assert store.save(good) == [] and store.current.name == "Testa"
    problems = store.save(good.replace("## Quirks", "## Quirkz"))
    assert [p.message for p in problems] == ["missing section '## Quirks'"]
    assert path.read_text(encoding="utf-8").count("Quirkz") == 1  # nothing the user typed is lost
    assert store.current.name == "Testa"
    assert store.check(good) == []
