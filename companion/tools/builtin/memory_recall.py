"""memory_recall — find saved notes by words, best matches first, saying when the list is partial."""

from __future__ import annotations

import re

from companion.safety.jail.beneath import scan_beneath
from companion.tools.builtin.memory_write import Note, memory_dir, read_notes, topic_file_name

SCHEMA = {
    "type": "function",
    "name": "memory_recall",
    "description": (
        "Look through saved notes. Give words to search for; optionally a topic to look in. "
        "With neither, it lists the topics there are notes on."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for in the notes."},
            "topic": {"type": "string", "description": "Only look under this topic."},
        },
        "additionalProperties": False,
    },
}
TOOLSET = "memory"
RISK = "read"

ANNOUNCE = "Let me check my notes."
HEARTBEAT = ["Still leafing through my notes..."]
COMPLETE = "Here's what I remember."
FAIL = "I couldn't read my notes."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}

MAX_NOTES_SHOWN = 5
MAX_NOTE_CHARS_SHOWN = 400
MAX_TOPICS_LISTED = 40
MAX_FILE_BYTES = 2_000_000
# Words that say nothing about what a note is about.
_STOP_WORDS = frozenset(
    {
        "a", "an", "and", "any", "are", "about", "did", "do", "does", "for", "from", "had", "has",
        "have", "i", "in", "is", "it", "me", "my", "of", "on", "or", "remember", "that", "the",
        "this", "to", "was", "we", "what", "when", "where", "which", "who", "you", "your",
    }
)


async def execute(args: dict, ctx) -> str:
    args = args if isinstance(args, dict) else {}
    query, topic = args.get("query") or "", args.get("topic") or ""
    if not isinstance(query, str) or not isinstance(topic, str):
        return ctx.fail("Give me words to look for, as plain text.")
    folder = memory_dir(ctx.data_dir)
    try:
        # Listed without following links: a link planted in the folder is not a note.
        files = [folder / e.name for e in scan_beneath(folder, ".") if e.is_file and e.name.endswith(".md")]
    except OSError:
        files = []
    if topic.strip():
        wanted = folder / topic_file_name(" ".join(topic.split()))
        files = [p for p in files if p == wanted]
        if not files:
            return f"I have no notes under {topic.strip()!r}."
    if not files:
        return "I don't have any notes yet."
    notes, unreadable = _load(files)
    words = _words(query)
    if not words:
        if topic.strip():
            return _show(notes[::-1], f"under {topic.strip()!r}", unreadable)
        return _list_topics(notes, unreadable)
    scored = [(score, note) for note in notes if (score := _score(note, words)) > 0]
    # Best first; among equals the newest first.
    scored.sort(key=lambda pair: (pair[0], pair[1].when), reverse=True)
    found = [note for _, note in scored]
    if not found:
        return f"I found no notes about {query.strip()!r}." + _unreadable_text(unreadable)
    return _show(found, f"about {query.strip()!r}", unreadable)


def _load(files: list) -> tuple[list[Note], int]:
    notes: list[Note] = []
    unreadable = 0
    for path in files:
        try:
            notes.extend(read_notes(path, limit=MAX_FILE_BYTES))
        except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
            unreadable += 1
    return notes, unreadable


def _words(query: str) -> list[str]:
    words = re.findall(r"\w+", query.lower())
    meaningful = [w for w in words if w not in _STOP_WORDS]
    return list(dict.fromkeys(meaningful or words))


def _score(note: Note, words: list[str]) -> int:
    haystack = f"{note.topic}\n{note.text}".lower()
    tokens = set(re.findall(r"\w+", haystack))
    # Longer words also match inside longer ones ("meeting" finds "meetings").
    return sum(1 for w in words if (w in haystack if len(w) >= 3 else w in tokens))


def _show(notes: list[Note], what: str, unreadable: int) -> str:
    shown = notes[:MAX_NOTES_SHOWN]
    if len(notes) > len(shown):
        head = f"Showing {len(shown)} of {len(notes)} notes {what}, best matches first:"
    else:
        head = f"{_count(len(notes))} {what}:"
    lines = [head]
    for note in shown:
        text = " ".join(note.text.split())
        if len(text) > MAX_NOTE_CHARS_SHOWN:
            text = text[:MAX_NOTE_CHARS_SHOWN].rstrip() + "… (cut)"
        when = f", {note.when}" if note.when else ""
        lines.append(f"- [{note.topic}{when}] {text}")
    return "\n".join(lines) + _unreadable_text(unreadable)


def _list_topics(notes: list[Note], unreadable: int) -> str:
    counts: dict[str, int] = {}
    for note in notes:
        counts[note.topic] = counts.get(note.topic, 0) + 1
    if not counts:
        return "I don't have any notes yet." + _unreadable_text(unreadable)
    topics = sorted(counts)
    listed = ", ".join(f"{t} ({counts[t]})" for t in topics[:MAX_TOPICS_LISTED])
    more = (
        f" (showing {MAX_TOPICS_LISTED} of {len(topics)} topics)"
        if len(topics) > MAX_TOPICS_LISTED
        else ""
    )
    return f"I have notes on: {listed}{more}." + _unreadable_text(unreadable)


def _count(n: int) -> str:
    return "1 note" if n == 1 else f"{n} notes"


def _unreadable_text(unreadable: int) -> str:
    if not unreadable:
        return ""
    if unreadable == 1:
        return "\n(1 notes file couldn't be read and was skipped.)"
    return f"\n({unreadable} notes files couldn't be read and were skipped.)"
