"""The file tools: jailed to the workspace, capped, honest about cuts, and never half-writing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from companion.tools.action import patch, read_file, search_files, write_file
from companion.tools.context import ToolContext

OUTSIDE = "That path is outside my workspace."


@pytest.fixture
def base(tmp_path) -> Path:
    """tmp/ws is the workspace; tmp/outside holds a secret the tools must never touch."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("the secret needle\n")
    (tmp_path / "ws" / "out_link").symlink_to("../outside")
    (tmp_path / "ws" / "secret_link.txt").symlink_to("../outside/secret.txt")
    return tmp_path


@pytest.fixture
def ws(base) -> Path:
    return base / "ws"


def _ctx(ws: Path, **kwargs) -> ToolContext:
    return ToolContext(workspace=ws, data_dir=ws.parent / "data", **kwargs)


ESCAPES = ["../outside/secret.txt", "out_link/secret.txt", "secret_link.txt", "ABS_OUTSIDE", "/etc/passwd"]


def _escape(raw: str, base: Path) -> str:
    return raw.replace("ABS_OUTSIDE", str(base / "outside" / "secret.txt"))


# --- read_file -----------------------------------------------------------------------


async def test_read_file_reads_a_small_file_with_line_numbers(ws):
    (ws / "notes.txt").write_text("first\nsecond\n")
    ctx = _ctx(ws)
    assert await read_file.execute({"path": "notes.txt"}, ctx) == "notes.txt (2 lines):\n1: first\n2: second"
    assert not ctx.failed


async def test_read_file_reads_a_long_file_in_slices_and_says_where_it_cut(ws):
    (ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 1001)))
    first = await read_file.execute({"path": "long.txt"}, _ctx(ws))
    head, *lines = first.splitlines()
    assert head == "long.txt, showing lines 1-400 of 1,000; ask for start_line 401 to read on."
    assert lines[0] == "1: line 1" and lines[-1] == "400: line 400" and len(lines) == 400
    last = await read_file.execute({"path": "long.txt", "start_line": 801, "max_lines": 500}, _ctx(ws))
    assert last.splitlines()[0] == "long.txt, showing lines 801-1,000 of 1,000:"
    assert last.splitlines()[-1] == "1000: line 1000"


async def test_read_file_caps_the_characters_it_returns(ws):
    (ws / "wide.txt").write_text(("x" * 300 + "\n") * 300)
    answer = await read_file.execute({"path": "wide.txt"}, _ctx(ws))
    assert "(cut to keep it short)" in answer.splitlines()[0]
    assert len(answer) <= read_file.MAX_CHARS + 2_000


async def test_read_file_cuts_a_huge_single_line_without_reading_it_all(ws):
    (ws / "min.js").write_bytes(b"a" * (5 * 1024 * 1024))
    answer = await read_file.execute({"path": "min.js"}, _ctx(ws))
    assert answer.startswith("min.js (1 lines):\n1: aaaa")
    assert answer.endswith("(line cut at 2,000 characters)")
    assert len(answer) < 2_200


async def test_read_file_lists_a_folder(ws):
    (ws / "docs").mkdir()
    (ws / "docs" / "b.md").write_text("b")
    (ws / "docs" / "a").mkdir()
    answer = await read_file.execute({"path": "docs"}, _ctx(ws))
    assert answer == "docs is a folder with 2 entries:\na/\nb.md"


@pytest.mark.parametrize(
    ("setup", "args", "expected"),
    [
        (None, {"path": "nope.txt"}, "There's no file called nope.txt in my workspace."),
        ("bin", {"path": "blob.bin"}, "blob.bin looks like a binary file (5 bytes); I can only read text."),
        ("short", {"path": "short.txt", "start_line": 9}, "short.txt has only 1 lines, so there is no line 9."),
        ("short", {"path": "short.txt", "start_line": "two"}, "start_line and max_lines must be whole numbers from 1 up."),
        (None, {}, "I need a path to a file or folder in my workspace."),
    ],
)
async def test_read_file_answers_problems_with_a_sentence(ws, setup, args, expected):
    if setup == "bin":
        (ws / "blob.bin").write_bytes(b"\x00\x01\x02ab")
    if setup == "short":
        (ws / "short.txt").write_text("only\n")
    ctx = _ctx(ws)
    assert await read_file.execute(args, ctx) == expected
    assert ctx.failed


async def test_read_file_says_when_a_file_is_empty(ws):
    (ws / "empty.txt").write_text("")
    assert await read_file.execute({"path": "empty.txt"}, _ctx(ws)) == "empty.txt is empty."


@pytest.mark.parametrize("raw", ESCAPES)
async def test_read_file_never_reads_outside_the_workspace(base, ws, raw):
    ctx = _ctx(ws)
    answer = await read_file.execute({"path": _escape(raw, base)}, ctx)
    assert answer == OUTSIDE and ctx.failed


async def test_read_file_makes_the_workspace_if_it_is_missing(tmp_path):
    ws = tmp_path / "Companion"
    answer = await read_file.execute({"path": "."}, _ctx(ws))
    assert answer == "The workspace is an empty folder."
    assert ws.is_dir()


# --- write_file ----------------------------------------------------------------------


async def test_write_file_creates_parent_folders_and_the_exact_text(ws):
    ctx = _ctx(ws)
    answer = await write_file.execute({"path": "a/b/note.md", "content": "héllo\nworld\n"}, ctx)
    assert answer == "Created a/b/note.md: 13 bytes, 2 lines."
    assert (ws / "a" / "b" / "note.md").read_text(encoding="utf-8") == "héllo\nworld\n"
    assert not ctx.failed


async def test_write_file_replaces_a_file_and_keeps_its_permissions(ws):
    script = ws / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o755)
    answer = await write_file.execute({"path": "run.sh", "content": "echo new"}, _ctx(ws))
    assert answer == "Replaced run.sh: 8 bytes, 1 line."
    assert script.read_text() == "echo new"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


async def test_write_file_refuses_more_than_five_megabytes_and_keeps_the_old_file(ws):
    (ws / "big.txt").write_text("keep me")
    ctx = _ctx(ws)
    answer = await write_file.execute({"path": "big.txt", "content": "x" * (5 * 1024 * 1024 + 1)}, ctx)
    assert answer == "That's 5.0 MB of text; I only write files up to 5 MB, so I left big.txt alone."
    assert ctx.failed
    assert (ws / "big.txt").read_text() == "keep me"
    ok = await write_file.execute({"path": "edge.txt", "content": "y" * (5 * 1024 * 1024)}, _ctx(ws))
    assert ok.startswith("Created edge.txt: 5,242,880 bytes")


async def test_a_crash_while_writing_leaves_the_old_file_whole(ws, monkeypatch):
    (ws / "todo.md").write_text("old and precious")

    def crash(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", crash)
    ctx = _ctx(ws)
    answer = await write_file.execute({"path": "todo.md", "content": "new"}, ctx)
    assert answer == "The disk is full, so I couldn't write todo.md. Free some space and ask me again."
    assert ctx.failed
    assert (ws / "todo.md").read_text() == "old and precious"
    assert sorted(p.name for p in ws.iterdir()) == ["out_link", "secret_link.txt", "todo.md"]


@pytest.mark.parametrize("raw", ESCAPES)
async def test_write_file_never_writes_outside_the_workspace(base, ws, raw):
    ctx = _ctx(ws)
    answer = await write_file.execute({"path": _escape(raw, base), "content": "pwned"}, ctx)
    assert answer == OUTSIDE and ctx.failed
    assert (base / "outside" / "secret.txt").read_text() == "the secret needle\n"
    assert sorted(p.name for p in (base / "outside").iterdir()) == ["secret.txt"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"path": "x.txt"}, "I need the file's text as content."),
        ({"path": "folder", "content": "x"}, "folder is a folder, so I can't write a file there."),
        ({"path": "plain.txt/inner.txt", "content": "x"}, "Part of the path plain.txt/inner.txt is a file, not a folder."),
        ({"path": ".", "content": "x"}, "That's my whole workspace folder, not a file."),
    ],
)
async def test_write_file_answers_problems_with_a_sentence(ws, args, expected):
    (ws / "folder").mkdir()
    (ws / "plain.txt").write_text("plain")
    ctx = _ctx(ws)
    assert await write_file.execute(args, ctx) == expected
    assert ctx.failed
    assert (ws / "plain.txt").read_text() == "plain"


# --- patch ---------------------------------------------------------------------------


async def test_patch_replaces_text_that_matches_exactly_one_place(ws):
    (ws / "app.py").write_text("import os\n\nGREETING = 'hi'\nprint(GREETING)\n")
    ctx = _ctx(ws)
    answer = await patch.execute(
        {"path": "app.py", "old_text": "GREETING = 'hi'", "new_text": "GREETING = 'hello'"}, ctx
    )
    assert answer == "Changed app.py at line 3: 1 line(s) replaced by 1."
    assert (ws / "app.py").read_text() == "import os\n\nGREETING = 'hello'\nprint(GREETING)\n"
    assert not ctx.failed


async def test_patch_changes_nothing_when_the_text_matches_several_places(ws):
    original = "x = 1\nx = 1\nx = 1\n"
    (ws / "dup.py").write_text(original)
    ctx = _ctx(ws)
    answer = await patch.execute({"path": "dup.py", "old_text": "x = 1", "new_text": "x = 2"}, ctx)
    assert answer.startswith("That text appears in 3 places in dup.py, so I changed nothing;")
    assert ctx.failed
    assert (ws / "dup.py").read_text() == original


async def test_patch_changes_nothing_when_the_text_is_not_there(ws):
    (ws / "a.txt").write_text("alpha\n")
    ctx = _ctx(ws)
    answer = await patch.execute({"path": "a.txt", "old_text": "beta", "new_text": "gamma"}, ctx)
    assert answer == "I couldn't find that text in a.txt, so I changed nothing."
    assert ctx.failed and (ws / "a.txt").read_text() == "alpha\n"


async def test_patch_matches_windows_line_endings_and_keeps_them(ws):
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    answer = await patch.execute({"path": "win.txt", "old_text": "one\ntwo", "new_text": "1\n2"}, _ctx(ws))
    assert answer.startswith("Changed win.txt at line 1")
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_patch_keeps_an_executable_file_executable(ws):
    script = ws / "go.sh"
    script.write_text("echo one\n")
    script.chmod(0o700)
    await patch.execute({"path": "go.sh", "old_text": "one", "new_text": "two"}, _ctx(ws))
    assert script.read_text() == "echo two\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"path": "a.txt", "old_text": "", "new_text": "x"}, "I need the exact text to replace as old_text."),
        ({"path": "a.txt", "old_text": "a"}, "I need the replacement text as new_text (it may be empty)."),
        ({"path": "gone.txt", "old_text": "a", "new_text": "b"}, "There's no file called gone.txt in my workspace."),
        ({"path": "latin1.txt", "old_text": "caf", "new_text": "x"}, "latin1.txt isn't UTF-8 text, so I left it alone."),
    ],
)
async def test_patch_answers_problems_with_a_sentence(ws, args, expected):
    (ws / "a.txt").write_text("alpha\n")
    (ws / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    ctx = _ctx(ws)
    assert await patch.execute(args, ctx) == expected
    assert ctx.failed
    assert (ws / "latin1.txt").read_bytes() == "café\n".encode("latin-1")


@pytest.mark.parametrize("raw", ESCAPES)
async def test_patch_never_changes_a_file_outside_the_workspace(base, ws, raw):
    ctx = _ctx(ws)
    answer = await patch.execute(
        {"path": _escape(raw, base), "old_text": "secret", "new_text": "public"}, ctx
    )
    assert answer == OUTSIDE and ctx.failed
    assert (base / "outside" / "secret.txt").read_text() == "the secret needle\n"


# --- search_files (in-process: a read tool starts no programs) ----------------------------------------------------


async def test_search_finds_text_in_any_case_with_file_and_line(ws):
    (ws / "notes").mkdir()
    (ws / "notes" / "a.md").write_text("nothing\nA Needle here\n")
    (ws / "b:odd.txt").write_text("needle: with a colon\n")
    ctx = _ctx(ws)
    answer = await search_files.execute({"query": "needle"}, ctx)
    assert answer == (
        "Found 2 matches for 'needle':\nb:odd.txt:1: needle: with a colon\nnotes/a.md:2: A Needle here"
    )
    assert not ctx.failed


async def test_search_says_when_it_shows_only_part_of_the_matches(ws):
    for i in range(3):
        (ws / f"f{i}.txt").write_text("match\n" * 71)
    answer = await search_files.execute({"query": "MATCH"}, _ctx(ws))
    head, *lines = answer.splitlines()
    assert head == "Showing 80 of 213 matches for 'MATCH':"
    assert len(lines) == 80
    assert lines[0] == "f0.txt:1: match" and lines[-1] == "f1.txt:9: match"


async def test_search_can_look_in_one_folder(ws):
    (ws / "a").mkdir()
    (ws / "b").mkdir()
    (ws / "a" / "x.txt").write_text("word\n")
    (ws / "b" / "y.txt").write_text("word\n")
    answer = await search_files.execute({"query": "word", "path": "b"}, _ctx(ws))
    assert answer == "Found 1 match for 'word':\nb/y.txt:1: word"


async def test_search_never_follows_a_link_out_of_the_workspace(base, ws):
    (ws / "mine.txt").write_text("my needle\n")
    answer = await search_files.execute({"query": "needle"}, _ctx(ws))
    assert answer == "Found 1 match for 'needle':\nmine.txt:1: my needle"
    ctx = _ctx(ws)
    assert await search_files.execute({"query": "needle", "path": "out_link"}, ctx) == OUTSIDE
    assert ctx.failed
    assert await search_files.execute({"query": "needle", "path": str(base / "outside")}, _ctx(ws)) == OUTSIDE


async def test_search_skips_hidden_and_binary_files(ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("needle\n")
    (ws / ".hidden.txt").write_text("needle\n")
    (ws / "image.bin").write_bytes(b"\x00\x00needle\n")
    (ws / "seen.txt").write_text("needle\n")
    assert await search_files.execute({"query": "needle"}, _ctx(ws)) == (
        "Found 1 match for 'needle':\nseen.txt:1: needle"
    )


async def test_search_takes_the_query_as_plain_text(ws):
    (ws / "flags.txt").write_text("run with --verbose (a.b)*\n")
    answer = await search_files.execute({"query": "--verbose (a.b)*"}, _ctx(ws))
    assert answer == "Found 1 match for '--verbose (a.b)*':\nflags.txt:1: run with --verbose (a.b)*"
    assert await search_files.execute({"query": "a.b.c"}, _ctx(ws)) == "No matches for 'a.b.c'."


async def test_search_cuts_very_long_lines(ws):
    (ws / "wide.txt").write_text("needle" + "z" * 5_000 + "\n")
    answer = await search_files.execute({"query": "needle"}, _ctx(ws))
    assert len(answer.splitlines()[1]) < 400


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "Tell me what text to search for."),
        ({"query": "  "}, "Tell me what text to search for."),
        ({"query": "two\nlines"}, "Search for one line of text, under 1,000 characters."),
        ({"query": "x", "path": "missing"}, "There's nothing called missing in my workspace."),
        ({"query": "x", "path": "../outside"}, OUTSIDE),
    ],
)
async def test_search_answers_problems_with_a_sentence(ws, args, expected):
    ctx = _ctx(ws)
    assert await search_files.execute(args, ctx) == expected
    assert ctx.failed


async def test_the_walk_stops_at_the_budget_and_says_it_did_not_finish(ws, monkeypatch):
    ticks = iter(range(0, 10_000, 2))
    monkeypatch.setattr(search_files, "_clock", lambda: float(next(ticks)))
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_text("needle\n")
    answer = await search_files.execute({"query": "needle"}, _ctx(ws, budget_s=3))
    head, *lines = answer.splitlines()
    assert head.startswith("I stopped searching after 3 s; showing 1 of at least 1 matches")
    assert lines == ["a.txt:1: needle"]


async def test_the_walk_stops_when_the_turn_is_cancelled(ws, monkeypatch):
    (ws / "a.txt").write_text("needle\n")
    ctx = _ctx(ws)
    ctx.cancel.set()
    assert await search_files.execute({"query": "needle"}, ctx) == "I stopped the search."


async def test_the_file_tools_never_block_on_a_named_pipe(ws):
    os.mkfifo(ws / "pipe")
    for tool, args, expected in [
        (read_file, {"path": "pipe"}, "pipe isn't a regular file, so I won't open it."),
        (patch, {"path": "pipe", "old_text": "a", "new_text": "b"}, "pipe isn't a regular file, so I won't change it."),
        (write_file, {"path": "pipe", "content": "x"}, "pipe isn't a regular file, so I won't replace it."),
    ]:
        ctx = _ctx(ws)
        assert await tool.execute(args, ctx) == expected
        assert ctx.failed
    assert stat.S_ISFIFO((ws / "pipe").stat().st_mode)
