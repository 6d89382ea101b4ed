"""The file tools at the file system's limits: deep trees, long names, link farms, a full disk,
a read-only disk and a folder she may not write all give sentences, never exceptions."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from places import ROOT

from companion.tools.action import patch, read_file, search_files, write_file
from companion.tools.action._files import file_error_sentence
from companion.tools.context import ToolContext

TOO_LONG = "That file name is too long."


def _ctx(ws: Path, **kwargs) -> ToolContext:
    return ToolContext(workspace=ws, data_dir=ws.parent / "data", **kwargs)


def _deep_tree(ws: Path, depth: int, name: str = "d") -> None:
    """`depth` nested folders under ws, made relative to each other (the whole path is too long
    for one system call), with a needle at level 3 and one at the bottom."""
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(1, depth + 1):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            if level in (3, depth):
                note = os.open("note.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(note, f"needle at level {level}\n".encode())
                os.close(note)
    finally:
        os.close(fd)


def _flatten(ws: Path, name: str = "d") -> None:
    """Remove a deep tree level by level (pytest's recursive clean-up would overflow the stack)."""
    while (ws / name).is_dir():
        inner = ws / f"{name}.inner"
        if (ws / name / name).is_dir():
            (ws / name / name).rename(inner)
        for leftover in (ws / name).iterdir():
            leftover.unlink()
        (ws / name).rmdir()
        if inner.is_dir():
            inner.rename(ws / name)


@pytest.fixture
def deep_ws(tmp_path) -> Iterator[Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    _deep_tree(ws, sys.getrecursionlimit() + 200)
    yield ws
    _flatten(ws)


async def test_search_files_on_a_tree_deeper_than_the_stack_says_the_tree_is_too_deep(deep_ws):
    ctx = _ctx(deep_ws, budget_s=30)
    answer = await search_files.execute({"query": "needle"}, ctx)
    head, *lines = answer.splitlines()
    assert head.startswith("Showing 1 of at least 1 matches for 'needle'; the search was not complete "
                           "(the tree is too deep: 1 folder more than 64 levels down was left out)")
    assert lines == ["d/d/d/note.txt:1: needle at level 3"]
    assert not ctx.failed


async def test_search_files_stops_at_its_entry_bound_and_says_how_many_it_looked_at(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(30):
        (ws / f"f{i:02}.txt").write_text("needle\n")
    monkeypatch.setattr(search_files, "MAX_ENTRIES", 12)
    answer = await search_files.execute({"query": "needle"}, _ctx(ws))
    head, *lines = answer.splitlines()
    assert head == ("Showing 12 of at least 12 matches for 'needle'; the search was not complete "
                    "(I stopped after looking at 12 files and folders):")
    # Which 12 depends on the folder's own order: the bound stops reading it, unsorted.
    assert len(set(lines)) == 12 and all(line.endswith(".txt:1: needle") for line in lines)


async def test_a_link_farm_neither_loops_the_search_nor_stalls_the_event_loop(tmp_path):
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "deep.txt").write_text("needle\n")
    for i in range(8):
        (ws / f"l{i}").symlink_to(".")
        (ws / "a" / f"l{i}").symlink_to("..")
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticking = asyncio.ensure_future(ticker())
    started = time.monotonic()
    answer = await search_files.execute({"query": "needle"}, _ctx(ws, budget_s=20))
    took = time.monotonic() - started
    done.set()
    await ticking
    assert answer == "Found 1 match for 'needle':\na/b/deep.txt:1: needle"
    assert took < 5, took
    # The loop kept turning while the search ran: no gap near the search's own length.
    assert gaps and max(gaps) < 0.5, max(gaps)
    # Through the farm by hand: realpath folds it, and the file is one file.
    read = await read_file.execute({"path": "l0/l1/l2/l3/l4/l5/l6/l7/a/l0/a/b/deep.txt"}, _ctx(ws))
    assert read == "a/b/deep.txt (1 lines):\n1: needle"


async def test_read_file_counts_a_huge_files_lines_only_so_far_and_says_so(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.log").write_text("".join(f"line {i:04}\n" for i in range(1, 1001)))  # 10,000 bytes
    monkeypatch.setattr(read_file, "MAX_COUNT_BYTES", 2048)
    first = await read_file.execute({"path": "big.log"}, _ctx(ws))
    assert first.splitlines()[0] == ("big.log, showing lines 1-400 of more than 204 (it is 9.8 KB; I counted the "
                                     "lines of the first 2 KB); ask for start_line 401 to read on.")
    last = await read_file.execute({"path": "big.log", "start_line": 801}, _ctx(ws))
    assert last.splitlines()[0] == "big.log, showing lines 801-1,000 of 1,000:"
    ctx = _ctx(ws)
    assert await read_file.execute({"path": "big.log", "start_line": 5000}, ctx) == (
        "big.log has only 1,000 lines, so there is no line 5,000.")
    assert ctx.failed


async def test_a_300_character_name_is_too_long_for_every_file_tool(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    name = "n" * 300 + ".txt"
    for tool, args in ((write_file, {"path": name, "content": "x"}), (read_file, {"path": name}),
                       (patch, {"path": name, "old_text": "x", "new_text": "y"}),
                       (search_files, {"query": "x", "path": f"sub/{name}"}),
                       (write_file, {"path": f"{name}/inner.txt", "content": "x"})):
        ctx = _ctx(ws)
        assert await tool.execute(args, ctx) == TOO_LONG, tool.__name__
        assert ctx.failed
    assert list(ws.iterdir()) == []


async def test_a_path_longer_than_the_kernel_takes_gets_a_sentence(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = _ctx(ws)
    answer = await write_file.execute({"path": "/".join(["abcdefgh"] * 600) + "/x.txt", "content": "x"}, ctx)
    assert answer == "That path is too long." and ctx.failed
    assert list(ws.iterdir()) == []


def test_a_link_met_on_the_way_is_named_as_a_link(tmp_path):
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "link.txt").symlink_to("real.txt")
    with pytest.raises(OSError) as met:
        os.open(tmp_path / "link.txt", os.O_RDONLY | os.O_NOFOLLOW)
    assert met.value.errno == errno.ELOOP
    assert file_error_sentence(met.value, "link.txt", "write") == (
        "link.txt goes through a link, and I don't follow links when I write files.")


# --- real file-system faults, in a child process ------------------------------------------

TOOL_RUNNER = """
import asyncio, json, sys
from pathlib import Path
from companion.tools.action import patch, write_file
from companion.tools.context import ToolContext

ws, tool = Path(sys.argv[1]), sys.argv[2]
args, setup = json.loads(sys.stdin.read())  # on stdin: a 200 KB argument is over exec's limit
for name, text in setup.items():
    (ws / name).write_text(text)
ctx = ToolContext(workspace=ws, data_dir=Path("/nonexistent/data"))
said = asyncio.run({"write_file": write_file, "patch": patch}[tool].execute(args, ctx))
print(json.dumps({"said": said, "failed": ctx.failed,
                  "files": {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()}}))
"""


def _run_tool(ws: Path, tool: str, args: dict, *, setup: dict | None = None,
              prefix: list[str] | None = None) -> dict:
    command = [*(prefix or []), sys.executable, "-c", TOOL_RUNNER, str(ws), tool]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env,
                          input=json.dumps([args, setup or {}]))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _bwrap() -> str:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "bubblewrap is a system dependency (scripts/system-deps.sh)"
    return bwrap


def test_a_full_disk_is_said_plainly_and_the_old_file_stays_whole(tmp_path):
    ws = tmp_path / "small-disk"
    ws.mkdir()
    # A 64 KB tmpfs over the workspace, in a mount namespace of the child's own.
    prefix = [_bwrap(), "--dev-bind", "/", "/", "--size", "65536", "--tmpfs", str(ws), "--"]
    for tool, args in (("write_file", {"path": "todo.md", "content": "x" * 200_000}),
                       ("patch", {"path": "todo.md", "old_text": "old", "new_text": "y" * 200_000})):
        ran = _run_tool(ws, tool, args, setup={"todo.md": "old and precious"}, prefix=prefix)
        assert ran["said"] == "The disk is full, so I couldn't {} todo.md. Free some space and ask me again.".format(
            "write" if tool == "write_file" else "change")
        assert ran["failed"]
        assert ran["files"] == {"todo.md": "old and precious"}  # and no temp file left behind


def test_a_read_only_disk_is_said_plainly(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "todo.md").write_text("old")
    prefix = [_bwrap(), "--dev-bind", "/", "/", "--ro-bind", str(ws), str(ws), "--"]
    ran = _run_tool(ws, "write_file", {"path": "todo.md", "content": "new"}, prefix=prefix)
    assert ran["said"] == "todo.md is on a read-only disk, so I can't write it."
    assert (ws / "todo.md").read_text() == "old"


def test_a_folder_she_may_not_write_is_said_plainly(tmp_path):
    ws = tmp_path / "ws"
    (ws / "locked").mkdir(parents=True)
    (ws / "locked").chmod(0o555)
    # Root writes anywhere through CAP_DAC_OVERRIDE: without capabilities the folder's mode rules.
    prefix = [_bwrap(), "--dev-bind", "/", "/", "--cap-drop", "ALL", "--"]
    ran = _run_tool(ws, "write_file", {"path": "locked/new.txt", "content": "x"}, prefix=prefix)
    assert ran["said"] == "I'm not allowed to write locked/new.txt."
    assert list((ws / "locked").iterdir()) == []
