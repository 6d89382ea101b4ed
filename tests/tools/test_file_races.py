"""The file tools against a folder swapped for a symlink between the jail's check and the use.

A thread flips `sub` between a real folder and a link to a folder outside the workspace as
fast as it can, while the real tools write, patch, read, search and take notes through it.
Nothing may land outside, change outside, or be read from outside.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.tools.action import patch, read_file, search_files, write_file
from companion.tools.builtin import memory_recall, memory_write
from companion.tools.context import ToolContext

ROUNDS = 200


FLIPPER = """
import os, sys, time
folder, real, target = sys.argv[1:]
print("flipping", flush=True)
while True:
    # Each state lasts about as long as a tool takes from its check to its write.
    for step in (lambda: os.rename(folder, real), lambda: os.symlink(target, folder), lambda: time.sleep(3e-4),
                 lambda: os.unlink(folder), lambda: os.rename(real, folder), lambda: time.sleep(3e-4)):
        try:
            step()
        except OSError:  # a tool may have recreated the folder meanwhile
            pass
"""


@contextlib.contextmanager
def flipping(folder: Path, target: Path) -> Iterator[None]:
    """Swap `folder` for a link to `target` and back, over and over, in another process
    (on another core, as an attacker's program would), until the block ends."""
    real = folder.with_name(folder.name + "-real")
    flipper = subprocess.Popen([sys.executable, "-c", FLIPPER, str(folder), str(real), str(target)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert flipper.stdout is not None and flipper.stdout.readline() == "flipping\n"
        yield
    finally:
        flipper.kill()
        flipper.wait()
        if folder.is_symlink():
            folder.unlink()
        if real.exists() and not folder.exists():
            real.rename(folder)


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    for folder in (ws / "sub", outside):
        (folder / "page.txt").write_text("where am I\n")
    (outside / "page.txt").write_text("OUTSIDE where am I\n")
    return ws, outside


def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws, data_dir=ws.parent / "data", budget_s=10)


async def test_writes_never_land_outside_while_a_folder_is_swapped_for_a_link(place) -> None:
    ws, outside = place
    with flipping(ws / "sub", outside):
        for i in range(ROUNDS):
            await write_file.execute({"path": f"sub/f{i}.txt", "content": "x\n"}, ctx(ws))
            await write_file.execute({"path": f"sub/deeper/g{i}.txt", "content": "x\n"}, ctx(ws))
    assert sorted(p.name for p in outside.iterdir()) == ["page.txt"]


async def test_patches_and_reads_never_touch_the_outside_file_while_a_folder_is_swapped(place) -> None:
    ws, outside = place
    with flipping(ws / "sub", outside):
        for _ in range(ROUNDS):
            read = await read_file.execute({"path": "sub/page.txt"}, ctx(ws))
            assert "OUTSIDE" not in read
            await patch.execute({"path": "sub/page.txt", "old_text": "where", "new_text": "here"}, ctx(ws))
            await patch.execute({"path": "sub/page.txt", "old_text": "here", "new_text": "where"}, ctx(ws))
            found = await search_files.execute({"query": "where am"}, ctx(ws))
            assert "OUTSIDE" not in found
    assert (outside / "page.txt").read_text() == "OUTSIDE where am I\n"


async def test_memory_notes_are_never_written_through_a_planted_link(tmp_path: Path) -> None:
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere.md"
    elsewhere.write_text("# birthdays\n\n## 2020-01-01 00:00\n\nnot hers\n")
    (data / "memory").mkdir(parents=True)
    (data / "memory" / "birthdays.md").symlink_to(elsewhere)
    context = ToolContext(workspace=tmp_path / "ws", data_dir=data)
    answer = await memory_write.execute({"topic": "birthdays", "note": "Ada on 10 December"}, context)
    assert context.failed and "left it alone" in answer
    assert elsewhere.read_text() == "# birthdays\n\n## 2020-01-01 00:00\n\nnot hers\n"
    recall = ToolContext(workspace=tmp_path / "ws", data_dir=data)
    assert "not hers" not in await memory_recall.execute({"query": "birthdays"}, recall)
