"""memory_write — save a note under a topic, as Markdown in the data dir's memory/ folder.

One file per topic (`memory/<safe-name>.md`): a `# Topic` title, then one `## date time`
section per note. Writing appends a section and replaces the file atomically, so earlier
notes are kept and a crash never leaves half a file. memory_recall reads the same format.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from companion.errors import could_not_save
from companion.safety.jail.beneath import read_beneath, write_beneath

SCHEMA = {
    "type": "function",
    "name": "memory_write",
    "description": (
        "Remember something for later: save a short note under a topic (for example "
        "'birthdays' or 'project ideas'). Earlier notes under the topic are kept."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "topic": {"type": "string", "description": "A few words naming the topic."},
            "note": {"type": "string", "description": "What to remember, in plain words."},
        },
        "required": ["topic", "note"],
        "additionalProperties": False,
    },
}
TOOLSET = "memory"
RISK = "write"

ANNOUNCE = "I'll make a note of that."
HEARTBEAT = ["Still writing it down..."]
COMPLETE = "Noted."
FAIL = "I couldn't write that down."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "sad"}

MAX_NOTE_CHARS = 20_000
MAX_TOPIC_CHARS = 120
MAX_SLUG_CHARS = 60
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M"
_NOTE_HEADING = re.compile(r"^## (\d{4}-\d{2}-\d{2} \d{2}:\d{2})\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Note:
    topic: str
    when: str
    text: str


def memory_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "memory"


def topic_file_name(topic: str) -> str:
    """A safe file name for a topic: lowercase ASCII words joined by hyphens, plus .md.

    Topics with no ASCII letters at all (say, in Japanese) get a stable short hash.
    """
    ascii_text = unicodedata.normalize("NFKD", topic).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:MAX_SLUG_CHARS].strip("-")
    if not slug:
        slug = "topic-" + hashlib.sha256(topic.encode("utf-8")).hexdigest()[:10]
    return slug + ".md"


def read_notes(path: Path, limit: int | None = None) -> list[Note]:
    """The notes in one topic file; a hand-written file without note headings is one note.

    The file is opened in its folder without following a link (a link there is refused);
    a file longer than `limit` bytes raises ValueError.
    """
    data = read_beneath(Path(path).parent, Path(path).name, None if limit is None else limit + 1)
    if limit is not None and len(data) > limit:
        raise ValueError(f"{path} is over {limit} bytes")
    text = data.decode("utf-8")
    title_match = re.match(r"^# (.+)$", text, re.MULTILINE)
    topic = title_match.group(1).strip() if title_match else path.stem
    parts = _NOTE_HEADING.split(text)
    notes = [
        Note(topic, when, _unescape(body).strip())
        for when, body in zip(parts[1::2], parts[2::2], strict=True)
        if body.strip()
    ]
    if not notes:
        body = text[title_match.end():] if title_match else text
        if body.strip():
            notes.append(Note(topic, "", body.strip()))
    return notes


async def execute(args: dict, ctx) -> str:
    topic = args.get("topic") if isinstance(args, dict) else None
    note = args.get("note") if isinstance(args, dict) else None
    if not isinstance(topic, str) or not topic.strip():
        return ctx.fail("Tell me a topic to file the note under.")
    if not isinstance(note, str) or not note.strip():
        return ctx.fail("There was nothing to write down; tell me what to remember.")
    topic = " ".join(topic.split())
    if len(topic) > MAX_TOPIC_CHARS:
        return ctx.fail(f"That topic name is too long; keep it under {MAX_TOPIC_CHARS} characters.")
    if len(note) > MAX_NOTE_CHARS:
        return ctx.fail(f"That note is too long to keep; keep it under {MAX_NOTE_CHARS:,} characters.")
    folder = memory_dir(ctx.data_dir)
    path = folder / topic_file_name(topic)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        existing = read_beneath(folder, path.name).decode("utf-8")
    except FileNotFoundError:
        existing = f"# {topic}\n"
    except (OSError, UnicodeDecodeError):
        return ctx.fail(
            f"My notes file for {topic!r} ({path.name}) isn't readable text, so I left it alone."
        )
    stamp = datetime.now().strftime(TIMESTAMP_FORMAT)
    section = f"\n## {stamp}\n\n{_escape(note.strip())}\n"
    try:
        text = existing.rstrip("\n") + "\n" + section
        write_beneath(folder, path.name, text.encode("utf-8"))  # atomic, never through a link
    except OSError as exc:
        return ctx.fail(could_not_save("the note", folder, exc))
    count = len(_NOTE_HEADING.findall(existing)) + 1
    earlier = "" if count == 1 else f" ({count} notes on it now)"
    return f"I saved that under {topic!r}{earlier}."


def _escape(text: str) -> str:
    # A note line that looks like a note heading would split the note when read back.
    return "\n".join("\\" + line if _NOTE_HEADING.match(line) else line for line in text.split("\n"))


def _unescape(text: str) -> str:
    return "\n".join(
        line[1:] if line.startswith("\\") and _NOTE_HEADING.match(line[1:]) else line
        for line in text.split("\n")
    )
