"""The path jail: `..`, symlinks and absolute paths never lead out of the workspace.

The property test builds paths from awkward pieces (`..`, links out, links back in, a link
loop, a sibling folder whose name starts like the workspace's) and checks every accepted path
against the kernel's own view of where it lands, found by climbing `/..` with stat().
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.safety.jail.beneath import write_beneath
from companion.safety.jail.jail import (
    OUTSIDE_SENTENCE,
    JailError,
    ensure_workspace,
    resolve_in_workspace,
    shown_path,
)

PIECES = [
    "..", ".", "", "a", "c", "b.txt", "new", "in_link", "out_link", "up_link", "loop",
    "abs_out", "dangling_out", "back", "secret.txt", "ws", "ws2", "outside", "file_out", "file_in",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """base/ws is the workspace, with links every which way; base/outside and base/ws2 are not."""
    base = tmp_path_factory.mktemp("jail")
    ws = base / "ws"
    (ws / "a" / "c").mkdir(parents=True)
    (ws / "a" / "b.txt").write_text("inside")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("secret")
    (base / "ws2").mkdir()
    (base / "ws2" / "secret.txt").write_text("twin secret")
    (ws / "in_link").symlink_to("a")
    (ws / "out_link").symlink_to("../outside")
    (ws / "up_link").symlink_to("..")
    (ws / "loop").symlink_to("loop")
    (ws / "abs_out").symlink_to("/")
    (ws / "dangling_out").symlink_to(base / "outside" / "not_yet")
    (ws / "file_out").symlink_to("../outside/secret.txt")
    (ws / "a" / "file_in").symlink_to("b.txt")
    (base / "outside" / "back").symlink_to("../ws/a")
    (base / "ws_link").symlink_to("ws")
    return base


def _kernel_says_inside(path: Path, root: Path) -> bool:
    """Where the kernel lands for `path`: climb '/..' from its deepest existing part to root or '/'."""
    assert ".." not in path.parts and path.is_absolute()
    existing = path
    while not os.path.exists(existing):
        existing = existing.parent
    root_id = (os.stat(root).st_dev, os.stat(root).st_ino)
    current = str(existing)
    if not os.path.isdir(current):
        # A file is where its directory lists it: its inode must be a real entry there.
        folder = os.path.dirname(current)
        target = os.stat(current)
        entries = {(e.stat(follow_symlinks=False).st_dev, e.inode()) for e in os.scandir(folder)}
        if (target.st_dev, target.st_ino) not in entries:
            return False
        current = folder
    for _ in range(200):
        info = os.stat(current)
        if (info.st_dev, info.st_ino) == root_id:
            return True
        parent = os.stat(current + "/..")
        if (parent.st_dev, parent.st_ino) == (info.st_dev, info.st_ino):
            return False  # reached the filesystem root
        current += "/.."
    raise AssertionError("climbed too far")


paths = st.builds(
    lambda prefix, pieces, trailing: prefix + "/".join(pieces) + trailing,
    st.sampled_from(["", "./", "/", "ABS_WS/", "ABS_BASE/"]),
    st.lists(st.sampled_from(PIECES), min_size=0, max_size=7),
    st.sampled_from(["", "/", "/."]),
)


@settings(max_examples=400, deadline=None)
@given(raw=paths, through_link=st.booleans())
def test_no_generated_path_resolving_outside_the_workspace_is_accepted(tree, raw, through_link):
    workspace = tree / ("ws_link" if through_link else "ws")
    raw = raw.replace("ABS_WS", str(workspace)).replace("ABS_BASE", str(tree))
    root = (tree / "ws").resolve()
    try:
        resolved = resolve_in_workspace(workspace, raw)
    except JailError as exc:
        assert exc.sentence  # every refusal says why
        return
    assert resolved.is_absolute()
    assert _kernel_says_inside(resolved, root), f"{raw!r} was accepted as {resolved}"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "c", "notes", "x.md", "deep"]), min_size=1, max_size=6))
def test_plain_relative_paths_are_always_accepted_where_they_say(tree, pieces):
    raw = "/".join(pieces)
    assert resolve_in_workspace(tree / "ws", raw) == (tree / "ws").resolve() / raw


def test_dot_dot_out_of_the_workspace_is_refused(tree):
    with pytest.raises(JailError) as caught:
        resolve_in_workspace(tree / "ws", "a/../../outside/secret.txt")
    assert caught.value.sentence == OUTSIDE_SENTENCE == "That path is outside my workspace."


def test_an_absolute_path_is_accepted_only_inside_the_workspace(tree):
    inside = tree / "ws" / "a" / "b.txt"
    assert resolve_in_workspace(tree / "ws", str(inside)) == inside.resolve()
    with pytest.raises(JailError, match="outside my workspace"):
        resolve_in_workspace(tree / "ws", str(tree / "outside" / "secret.txt"))
    with pytest.raises(JailError, match="outside my workspace"):
        resolve_in_workspace(tree / "ws", "/etc/passwd")


def test_a_sibling_folder_whose_name_starts_like_the_workspace_is_outside(tree):
    with pytest.raises(JailError, match="outside my workspace"):
        resolve_in_workspace(tree / "ws", "../ws2/secret.txt")
    with pytest.raises(JailError, match="outside my workspace"):
        resolve_in_workspace(tree / "ws", str(tree / "ws2" / "secret.txt"))


def test_a_symlink_pointing_out_is_refused_and_one_pointing_in_is_followed(tree):
    for raw in ("out_link/secret.txt", "abs_out/etc/passwd", "up_link/outside", "dangling_out", "file_out"):
        with pytest.raises(JailError, match="outside my workspace"):
            resolve_in_workspace(tree / "ws", raw)
    assert resolve_in_workspace(tree / "ws", "in_link/b.txt") == (tree / "ws" / "a" / "b.txt").resolve()
    # Out through one link and back in through another lands inside: that is allowed.
    assert resolve_in_workspace(tree / "ws", str(tree / "outside" / "back" / "b.txt")) == (
        tree / "ws" / "a" / "b.txt"
    ).resolve()


def test_a_symlink_loop_cannot_smuggle_a_link_out(tree):
    # realpath stops at the loop and folds the `..` by text, landing on out_link itself.
    with pytest.raises(JailError, match="symlink loop"):
        resolve_in_workspace(tree / "ws", "loop/../out_link/secret.txt")
    with pytest.raises(JailError, match="symlink loop"):
        resolve_in_workspace(tree / "ws", "loop/x")


def test_a_workspace_reached_through_a_symlink_still_works(tree):
    assert resolve_in_workspace(tree / "ws_link", "a/b.txt") == (tree / "ws" / "a" / "b.txt").resolve()


def test_a_missing_workspace_is_created(tmp_path):
    workspace = tmp_path / "Companion"
    assert resolve_in_workspace(workspace, "notes/today.md") == workspace.resolve() / "notes" / "today.md"
    assert workspace.is_dir()


def test_a_workspace_that_is_a_file_is_refused_with_a_sentence(tmp_path):
    blocker = tmp_path / "Companion"
    blocker.write_text("not a folder")
    with pytest.raises(JailError) as caught:
        ensure_workspace(blocker)
    assert "workspace" in caught.value.sentence


def test_the_home_shortcut_means_the_home_folder(tree, monkeypatch):
    monkeypatch.setenv("HOME", str(tree))
    assert resolve_in_workspace(tree / "ws", "~/ws/a/b.txt") == (tree / "ws" / "a" / "b.txt").resolve()
    with pytest.raises(JailError, match="outside my workspace"):
        resolve_in_workspace(tree / "ws", "~/outside/secret.txt")


@pytest.mark.parametrize("raw", [None, "", "   ", 42, "a\x00b"])
def test_a_missing_or_malformed_path_gets_a_sentence(tree, raw):
    with pytest.raises(JailError) as caught:
        resolve_in_workspace(tree / "ws", raw)
    assert caught.value.sentence.endswith(".")


def test_the_workspace_itself_is_refused_where_a_file_is_needed(tree):
    assert resolve_in_workspace(tree / "ws", ".") == (tree / "ws").resolve()
    with pytest.raises(JailError, match="whole workspace"):
        resolve_in_workspace(tree / "ws", "a/..", allow_root=False)


def test_paths_are_shown_relative_to_the_workspace(tree):
    ws = tree / "ws"
    assert shown_path(ws, (ws / "a" / "b.txt").resolve()) == "a/b.txt"
    assert shown_path(ws, ws.resolve()) == "the workspace"


def test_rewriting_a_file_keeps_its_permissions_and_a_new_file_gets_the_usual_ones(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    write_beneath(tmp_path, "run.sh", b"echo new\n")
    assert script.read_text() == "echo new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    fresh = tmp_path / "fresh.txt"
    old_umask = os.umask(0o022)
    try:
        write_beneath(tmp_path, "fresh.txt", b"hi")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
