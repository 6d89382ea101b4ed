"""memory_write keeps notes as Markdown, safely; memory_recall finds them and says when it cut."""

from __future__ import annotations

import os

import pytest

from companion.tools.builtin import memory_recall, memory_write
from companion.tools.context import ToolContext


@pytest.fixture
def ctx(tmp_path) -> ToolContext:
    return ToolContext(workspace=tmp_path / "ws", data_dir=tmp_path / "data")


def _fresh(ctx: ToolContext) -> ToolContext:
    return ToolContext(workspace=ctx.workspace, data_dir=ctx.data_dir)


async def _write(ctx, topic, note) -> str:
    call = _fresh(ctx)
    answer = await memory_write.execute({"topic": topic, "note": note}, call)
    assert not call.failed, answer
    return answer


async def test_a_note_is_saved_as_markdown_under_its_topic(ctx):
    answer = await memory_write.execute({"topic": "Birthdays", "note": "Mum: 4 March"}, ctx)
    assert answer == "I saved that under 'Birthdays'."
    path = ctx.data_dir / "memory" / "birthdays.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Birthdays\n")
    assert "\n## " in text and text.rstrip().endswith("Mum: 4 March")


async def test_writing_to_an_existing_topic_keeps_the_earlier_notes(ctx):
    await _write(ctx, "Birthdays", "Mum: 4 March")
    answer = await _write(ctx, "birthdays", "Dad: 12 July")
    assert answer == "I saved that under 'birthdays' (2 notes on it now)."
    notes = memory_write.read_notes(ctx.data_dir / "memory" / "birthdays.md")
    assert [n.text for n in notes] == ["Mum: 4 March", "Dad: 12 July"]
    assert all(n.topic == "Birthdays" for n in notes)


@pytest.mark.parametrize(
    ("topic", "file_name"),
    [
        ("../../etc/passwd", "etc-passwd.md"),
        ("Project ideas: 2026!", "project-ideas-2026.md"),
        ("Café notes", "cafe-notes.md"),
        ("/", None),
        ("日本語", None),
    ],
)
async def test_a_topic_becomes_a_safe_file_name_inside_the_memory_folder(ctx, topic, file_name):
    await _write(ctx, topic, "something")
    files = list((ctx.data_dir / "memory").iterdir())
    assert len(files) == 1
    name = files[0].name
    assert files[0].parent == ctx.data_dir / "memory"
    assert name == (file_name or name) and name.endswith(".md")
    assert all(c.isascii() and (c.isalnum() or c in "-.") for c in name)


async def test_a_note_with_a_heading_like_line_reads_back_whole(ctx):
    tricky = "Plan:\n## 2020-01-01 10:00\nstill the same note"
    await _write(ctx, "plans", tricky)
    await _write(ctx, "plans", "second")
    notes = memory_write.read_notes(ctx.data_dir / "memory" / "plans.md")
    assert [n.text for n in notes] == [tricky, "second"]


async def test_a_crash_while_saving_leaves_the_old_notes_whole(ctx, monkeypatch):
    await _write(ctx, "keys", "spare key under the mat")
    path = ctx.data_dir / "memory" / "keys.md"
    before = path.read_bytes()

    def crash(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", crash)
    answer = await memory_write.execute({"topic": "keys", "note": "car key in the drawer"}, ctx)
    assert answer == (f"I couldn't save the note: the disk is full ({ctx.data_dir / 'memory'}). "
                      "Free some space there and try again.")
    assert ctx.failed
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["keys.md"]


async def test_a_topic_file_that_is_not_text_is_left_alone(ctx):
    folder = ctx.data_dir / "memory"
    folder.mkdir(parents=True)
    (folder / "odd.md").write_bytes(b"\xff\xfe binary \x00")
    answer = await memory_write.execute({"topic": "odd", "note": "hello"}, ctx)
    assert "isn't readable text, so I left it alone" in answer and ctx.failed
    assert (folder / "odd.md").read_bytes() == b"\xff\xfe binary \x00"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"note": "x"}, "Tell me a topic to file the note under."),
        ({"topic": "t", "note": "   "}, "There was nothing to write down; tell me what to remember."),
        ({"topic": "t", "note": "x" * 20_001}, "That note is too long to keep; keep it under 20,000 characters."),
        ({"topic": "t" * 121, "note": "x"}, "That topic name is too long; keep it under 120 characters."),
        ({"topic": ["list"], "note": "x"}, "Tell me a topic to file the note under."),
    ],
)
async def test_memory_write_answers_bad_requests_with_a_sentence(ctx, args, expected):
    assert await memory_write.execute(args, ctx) == expected
    assert ctx.failed
    assert not (ctx.data_dir / "memory").exists()


async def test_recall_with_nothing_saved_says_so(ctx):
    assert await memory_recall.execute({"query": "anything"}, ctx) == "I don't have any notes yet."
    assert not ctx.failed


async def test_recall_finds_notes_by_words_best_match_first(ctx):
    await _write(ctx, "garden", "Plant the tulip bulbs in October")
    await _write(ctx, "garden", "The roses need feeding in spring")
    await _write(ctx, "shopping", "Buy tulip bulbs and compost")
    answer = await memory_recall.execute({"query": "when do I plant the tulip bulbs?"}, ctx)
    lines = answer.splitlines()
    assert lines[0] == "2 notes about 'when do I plant the tulip bulbs?':"
    assert lines[1].startswith("- [garden, ") and lines[1].endswith("] Plant the tulip bulbs in October")
    assert lines[2].startswith("- [shopping, ") and "compost" in lines[2]
    assert "roses" not in answer


async def test_recall_matches_topics_and_longer_forms_of_a_word(ctx):
    await _write(ctx, "meetings", "Standup moved to 9:30")
    answer = await memory_recall.execute({"query": "meeting"}, ctx)
    assert "Standup moved to 9:30" in answer


async def test_recall_says_when_the_list_is_partial(ctx):
    for i in range(12):
        await _write(ctx, f"trip {i}", f"packing list item {i} for the trip")
    answer = await memory_recall.execute({"query": "packing"}, ctx)
    assert answer.splitlines()[0] == "Showing 5 of 12 notes about 'packing', best matches first:"
    assert len(answer.splitlines()) == 6


async def test_recall_with_no_match_says_what_it_looked_for(ctx):
    await _write(ctx, "garden", "roses")
    assert await memory_recall.execute({"query": "bicycle"}, ctx) == "I found no notes about 'bicycle'."


async def test_recall_can_look_under_one_topic_only(ctx):
    await _write(ctx, "garden", "water the roses")
    await _write(ctx, "house", "water the plants indoors")
    answer = await memory_recall.execute({"query": "water", "topic": "Garden"}, ctx)
    assert "roses" in answer and "indoors" not in answer
    missing = await memory_recall.execute({"query": "water", "topic": "car"}, ctx)
    assert missing == "I have no notes under 'car'."


async def test_recall_without_words_lists_the_topics(ctx):
    await _write(ctx, "garden", "one")
    await _write(ctx, "garden", "two")
    await _write(ctx, "Birthdays", "three")
    answer = await memory_recall.execute({}, ctx)
    assert answer == "I have notes on: Birthdays (1), garden (2)."


async def test_recall_reads_a_hand_written_notes_file_and_cuts_long_notes(ctx):
    folder = ctx.data_dir / "memory"
    folder.mkdir(parents=True)
    (folder / "recipes.md").write_text("# Recipes\n\nPancakes: flour, eggs, milk. " + "Stir. " * 200)
    answer = await memory_recall.execute({"query": "pancakes"}, ctx)
    assert answer.startswith("1 note about 'pancakes':\n- [Recipes] Pancakes: flour")
    assert answer.endswith("… (cut)")
    assert len(answer) < 600


async def test_recall_skips_an_unreadable_file_and_says_so(ctx):
    await _write(ctx, "garden", "roses")
    (ctx.data_dir / "memory" / "broken.md").write_bytes(b"\xff\xfe\x00")
    answer = await memory_recall.execute({"query": "roses"}, ctx)
    assert "roses" in answer and "1 notes file couldn't be read" in answer
