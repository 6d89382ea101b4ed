"""A full disk is a sentence: what wasn't saved, that the disk is full, and where to free space.

The disk is real: a tmpfs of a few hundred KB mounted for the test (needs root or mount rights;
without them these tests are skipped and say why), filled until the kernel answers ENOSPC.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion.tools.builtin import memory_write
from companion.tools.context import ToolContext


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs of its own (a real file system that really fills up)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"a full disk needs a tmpfs mount, which is not allowed here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path) -> None:
    """Write to `disk` until the kernel says it is full."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == 28, exc  # ENOSPC
    finally:
        os.close(fd)


def chat(disk: Path, url: str, workspace: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", url,
               "--config-dir", str(disk / "config"), "--workspace", str(workspace)]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def test_when_the_disk_fills_mid_conversation_chat_says_so_once_and_keeps_answering(
        tiny_disk: Path, tmp_path: Path, scripted_brain) -> None:
    scripted_brain.push(*({"text": f"[happy] Answer {n}."} for n in range(1, 5)))
    child = chat(tiny_disk, scripted_brain.url, tmp_path)
    try:
        child.stdin.write(b"one\n")
        child.stdin.flush()
        first = [child.stdout.readline(), child.stdout.readline()]
        assert first == [b"[face] happy (reply)\n", b"[say] Answer 1.\n"]  # saved while there was room
        fill(tiny_disk)
        child.stdin.write(b"two\nthree\nfour\n")
        child.stdin.close()
        rest = child.stdout.read().decode()
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
    errors = [line for line in rest.splitlines() if line.startswith("[error]")]
    assert errors == [f"[error] I couldn't save our conversation: the disk is full ({tiny_disk / 'config' / 'data'}). "
                      "Free some space there and try again."]
    assert all(f"[say] Answer {n}." in rest for n in (2, 3, 4))  # she carries on
    assert "Traceback" not in rest


def test_a_disk_already_full_at_start_is_one_line_and_she_still_answers(
        tiny_disk: Path, tmp_path: Path, scripted_brain) -> None:
    scripted_brain.push({"text": "[happy] First run."}, {"text": "[happy] Still here."})
    first = chat(tiny_disk, scripted_brain.url, tmp_path)
    out, _ = first.communicate(b"hello\n", timeout=60)
    assert b"First run." in out
    fill(tiny_disk)
    second = chat(tiny_disk, scripted_brain.url, tmp_path)
    out, _ = second.communicate(b"hello again\n", timeout=60)
    shown = out.decode()
    errors = [line for line in shown.splitlines() if line.startswith("[error]")]
    assert errors == [f"[error] I couldn't save our conversations: the disk is full ({tiny_disk / 'config' / 'data'}). "
                      "Free some space there and try again. Until then I'll forget what we say when I close."]
    asked = [(body.get("messages") or [body])[-1].get("content", body) for body in scripted_brain.bodies]
    assert "[say] Still here." in shown, f"the brain was asked {asked} ({len(scripted_brain.warm_ups)} warm-ups)"
    assert "Traceback" not in shown and second.returncode == 0


async def test_a_note_on_a_full_disk_is_a_sentence_with_the_fix(tiny_disk: Path) -> None:
    ctx = ToolContext(workspace=tiny_disk / "ws", data_dir=tiny_disk / "data")
    assert "I saved that" in await memory_write.execute({"topic": "tea", "note": "green"}, ctx)
    fill(tiny_disk)
    call = ToolContext(workspace=ctx.workspace, data_dir=ctx.data_dir)
    answer = await memory_write.execute({"topic": "tea", "note": "also oolong " * 200}, call)
    assert call.failed
    assert answer == (f"I couldn't save the note: the disk is full ({tiny_disk / 'data' / 'memory'}). "
                      "Free some space there and try again.")
    assert "oolong" not in (tiny_disk / "data" / "memory" / "tea.md").read_text()  # the old notes, whole


def test_settings_that_cannot_be_saved_on_a_full_disk_are_one_banner_with_the_fix(
        qtbot, tiny_disk: Path, tmp_path: Path, scripted_brain, qt_loop) -> None:
    from companion.config import Paths, RunConfig, Settings, with_overrides
    from companion.ui.app import CompanionApp

    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")})
    app = CompanionApp(RunConfig(Paths.default(tiny_disk / "config"), settings), with_voice=False)
    qtbot.addWidget(app.window)
    app.show()
    try:
        qt_loop(app.start(), timeout=60)
        fill(tiny_disk)
        app.set_muted(not app.keeper.settings.voice.muted)  # a setting the user changes: saved at once
        banner = app.window.banners.banner("settings")
        assert banner is not None, app.window.banners.shown_keys()
        assert banner.label.text() == (f"I couldn't save your settings: the disk is full ({tiny_disk / 'config'}). "
                                       "Free some space there and try again.")
    finally:
        qt_loop(app.close())
