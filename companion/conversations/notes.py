"""Her memory notes as the user sees them: one Markdown file per topic (the memory tools' files).

Listing, reading, saving (atomically) and deleting a topic, for the window's notes panel.
The format is memory_write's: a `# Topic` title, then one `## date time` section per note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from companion.paths import atomic_write_text
from companion.tools.builtin.memory_write import memory_dir, read_notes, topic_file_name

_TITLE = re.compile(r"^# (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class NoteTopic:
    topic: str
    path: Path
    notes: int
    """How many dated notes the file holds (a hand-written file counts as one)."""


def list_topics(data_dir: Path) -> list[NoteTopic]:
    """Every topic file in her memory folder, alphabetically by topic."""
    folder = memory_dir(data_dir)
    if not folder.is_dir():
        return []
    topics = []
    for path in folder.glob("*.md"):
        try:
            text = path.read_text(encoding="utf-8")
            count = len(read_notes(path))
        except (OSError, UnicodeDecodeError):
            continue  # not hers to show: memory_recall skips it too
        title = _TITLE.search(text)
        topics.append(NoteTopic(title.group(1).strip() if title else path.stem, path, count))
    return sorted(topics, key=lambda t: t.topic.lower())


def read_topic(path: Path) -> str:
    return Path(path).read_text(encoding="utf-8")


def save_topic(path: Path, text: str) -> None:
    """Replace a topic file with edited text (atomically: a crash keeps the old or the new)."""
    atomic_write_text(Path(path), text if text.endswith("\n") else text + "\n")


def new_topic_path(data_dir: Path, topic: str) -> Path:
    return memory_dir(data_dir) / topic_file_name(topic)


def delete_topic(path: Path) -> None:
    Path(path).unlink(missing_ok=True)
