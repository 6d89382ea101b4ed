"""Her conversations on disk: one SQLite file in the data folder (stdlib sqlite3, WAL).

A conversation is a list of turns. A turn row is written the moment the user's words arrive
(`begin_turn`) and completed in one transaction when the turn ends (`finish_turn`), so a
crash or a kill never loses a finished turn and a half turn is just the user's words,
marked unfinished. Each turn keeps two things: the messages the model gets back as history,
and the transcript entries the window shows.

A file that is not a readable database is set aside (`conversations.broken-<time>.sqlite3`)
and a fresh one started; `notice` says so in one sentence. A failed write is logged and
reported through `notice` too: losing the disk never stops her talking.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from companion.errors import could_not_save

log = logging.getLogger(__name__)
T = TypeVar("T")

FILE_NAME = "conversations.sqlite3"
SCHEMA_VERSION = 1
TITLE_CHARS = 60

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    started REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    started REAL NOT NULL,
    finished REAL,
    user_text TEXT,
    spoken INTEGER NOT NULL DEFAULT 0,
    reply_text TEXT NOT NULL DEFAULT '',
    emotion TEXT NOT NULL DEFAULT '',
    interrupted INTEGER NOT NULL DEFAULT 0,
    messages TEXT NOT NULL DEFAULT '[]',
    entries TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns(conversation_id, id);
"""


@dataclass(frozen=True)
class Entry:
    """One line of the transcript: what the window shows for a turn, in order."""

    kind: str
    """heard | said | activity | notice"""
    text: str
    at: float = 0.0
    """Unix time it happened."""
    spoken: bool = False
    """heard: said aloud (not typed); said: she said it out loud."""
    tool: str = ""
    outcome: str = ""
    """activity: ok | failed | refused | interrupted ("" while running)."""
    elapsed_s: float = 0.0
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in ("", 0.0, False) or k in ("kind", "text")}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


@dataclass(frozen=True)
class StoredTurn:
    id: int
    started: float
    finished: float | None
    user_text: str | None
    """None for something she said on her own (a reminder, a job's result)."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        return self.finished is not None


@dataclass(frozen=True)
class ConversationSummary:
    id: int
    title: str
    started: float
    updated: float
    turns: int

    def label(self) -> str:
        when = datetime.fromtimestamp(self.updated).strftime("%Y-%m-%d %H:%M")
        return f"{self.title or 'New conversation'} · {when}"


class ConversationStore:
    """The open database. Safe to call from any thread (one connection behind a lock)."""

    def __init__(self, path: Path, on_failure: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self.notice: str | None = None
        self._on_failure = on_failure
        """Told the sentence when saving starts failing (a full disk mid-session), once per run
        of failures: the window and chat say it; a log line alone would reach nobody."""
        self._failing = False
        self._lock = threading.Lock()
        self._db = self._open()

    # --- opening ---------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                return self._connect(self.path)
            except sqlite3.DatabaseError as exc:
                if not self.path.exists():
                    raise
                backup = self._set_aside()
                log.warning("conversation database %s is damaged (%s); set aside as %s", self.path, exc, backup)
                self.notice = (f"My conversation history was damaged, so I set it aside as {backup.name} "
                               "and started a fresh one.")
                return self._connect(self.path)
        except (OSError, sqlite3.Error) as exc:
            # A read-only or missing data folder: remember this session only, and say so.
            log.warning("cannot open %s: %s", self.path, exc)
            self.notice = (could_not_save("our conversations", self.path.parent, exc)
                           + " Until then I'll forget what we say when I close.")
            return self._connect(":memory:")

    @staticmethod
    def _connect(path: Path | str) -> sqlite3.Connection:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            # FULL: a finished turn survives even a power cut, for one fsync per turn.
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("quick_check failed")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"written by a newer version (schema {version})")
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except BaseException:
            db.close()
            raise
        return db

    def _set_aside(self) -> Path:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        backup = self.path.with_name(f"{self.path.stem}.broken-{stamp}{self.path.suffix}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(str(self.path) + suffix)
            if part.exists():
                part.replace(Path(str(backup) + suffix))
        return backup

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T | None:
        """Run `work` in one transaction; a failure (disk full, read-only) is logged and noticed,
        not raised: None comes back instead."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                result = work(self._db)
                self._db.execute("COMMIT")
                self._failing = False
                return result
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                log.warning("could not save the conversation: %s", exc)
                self.notice = could_not_save("our conversation", self.path.parent, exc)
                first, self._failing = not self._failing, True
        if first and self._on_failure is not None:
            self._on_failure(self.notice)  # outside the lock: whoever hears it may read the store
        return None

    # --- conversations -----------------------------------------------------------------------
    def new_conversation(self) -> int:
        now = time.time()
        made = self._write(lambda db: db.execute(
            "INSERT INTO conversations (started, updated) VALUES (?, ?)", (now, now)).lastrowid)
        return int(made) if made is not None else 0

    def latest_conversation(self) -> int | None:
        with self._lock:
            row = self._db.execute("SELECT id FROM conversations ORDER BY updated DESC, id DESC LIMIT 1").fetchone()
        return None if row is None else int(row["id"])

    def conversations(self, search: str = "", limit: int = 500) -> list[ConversationSummary]:
        """Past conversations, latest first; `search` matches anything said in them."""
        query = ("SELECT c.id, c.title, c.started, c.updated, COUNT(t.id) AS turns FROM conversations c "
                 "LEFT JOIN turns t ON t.conversation_id = c.id ")
        params: list[Any] = []
        if search.strip():
            pattern = "%" + search.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            query += ("WHERE c.id IN (SELECT conversation_id FROM turns WHERE user_text LIKE ? ESCAPE '\\' "
                      "OR reply_text LIKE ? ESCAPE '\\') OR c.title LIKE ? ESCAPE '\\' ")
            params += [pattern, pattern, pattern]
        query += "GROUP BY c.id HAVING turns > 0 ORDER BY c.updated DESC, c.id DESC LIMIT ?"
        params.append(limit)
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        return [ConversationSummary(r["id"], r["title"], r["started"], r["updated"], r["turns"]) for r in rows]

    def delete_conversation(self, conversation_id: int) -> None:
        self._write(lambda db: db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,)))

    # --- turns -------------------------------------------------------------------------------
    def begin_turn(self, conversation_id: int, user_text: str, *, spoken: bool = False,
                   at: float | None = None) -> int | None:
        """The user's words are saved at once; None when the disk refused (see `notice`)."""
        now = at or time.time()
        entry = Entry("heard", user_text, at=now, spoken=spoken)

        def work(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "INSERT INTO turns (conversation_id, started, user_text, spoken, messages, entries) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, now, user_text, int(spoken),
                 json.dumps([{"role": "user", "content": user_text}]), json.dumps([entry.to_json()])))
            db.execute("UPDATE conversations SET updated = ?, title = CASE WHEN title = '' THEN ? ELSE title END "
                       "WHERE id = ?", (now, _title(user_text), conversation_id))
            return int(cursor.lastrowid)

        return self._write(work)

    def finish_turn(self, turn_id: int, *, messages: list[dict[str, Any]], entries: list[Entry],
                    emotion: str = "", interrupted: bool = False) -> None:
        """Complete a turn in one transaction: its messages for the model, its transcript."""
        now = time.time()
        reply = "\n".join(e.text for e in entries if e.kind == "said")

        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE turns SET finished = ?, messages = ?, entries = ?, reply_text = ?, emotion = ?, "
                "interrupted = ? WHERE id = ?",
                (now, json.dumps(messages), json.dumps([e.to_json() for e in entries]), reply, emotion,
                 int(interrupted), turn_id))
            db.execute("UPDATE conversations SET updated = ? WHERE id = (SELECT conversation_id FROM turns "
                       "WHERE id = ?)", (now, turn_id))

        self._write(work)

    def add_aside(self, conversation_id: int, entry: Entry, message: dict[str, Any] | None = None) -> int | None:
        """Something she said outside a turn (a reminder, a job's result): a finished turn of its own."""
        now = entry.at or time.time()

        def work(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "INSERT INTO turns (conversation_id, started, finished, reply_text, messages, entries) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, now, now, entry.text, json.dumps([message] if message else []),
                 json.dumps([entry.to_json()])))
            db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id))
            return int(cursor.lastrowid)

        return self._write(work)

    def add_entry(self, turn_id: int, entry: Entry) -> None:
        """One more transcript line for a finished turn (an "mm-hm" heard while she still spoke)."""

        def work(db: sqlite3.Connection) -> None:
            row = db.execute("SELECT entries FROM turns WHERE id = ?", (turn_id,)).fetchone()
            if row is not None:
                entries = [*json.loads(row["entries"]), entry.to_json()]
                db.execute("UPDATE turns SET entries = ? WHERE id = ?", (json.dumps(entries), turn_id))

        self._write(work)

    def replace_messages(self, turn_id: int, messages: list[dict[str, Any]]) -> None:
        """After a barge-in: the turn's history keeps only what the user heard."""
        self._write(lambda db: db.execute("UPDATE turns SET messages = ? WHERE id = ?",
                                          (json.dumps(messages), turn_id)))

    def turns(self, conversation_id: int, *, last: int | None = None) -> list[StoredTurn]:
        """The conversation's turns in order (only the `last` ones when given)."""
        query = "SELECT * FROM turns WHERE conversation_id = ? ORDER BY id DESC"
        params: list[Any] = [conversation_id]
        if last is not None:
            query += " LIMIT ?"
            params.append(last)
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        return [_turn(row) for row in reversed(rows)]

    def recent_messages(self, conversation_id: int, max_messages: int = 60) -> list[dict[str, Any]]:
        """The recent history of a conversation, as chat messages, oldest first.

        Whole turns only (never a tool result without its call), at most `max_messages`
        (a single longer turn is still given whole). A turn a kill left unfinished
        contributes just the user's words.
        """
        picked: list[list[dict[str, Any]]] = []
        count = 0
        for turn in reversed(self.turns(conversation_id, last=max(1, max_messages))):
            if picked and count + len(turn.messages) > max_messages:
                break
            picked.append(turn.messages)
            count += len(turn.messages)
        return [message for messages in reversed(picked) for message in messages]


def _title(text: str) -> str:
    words = " ".join(text.split())
    return words if len(words) <= TITLE_CHARS else words[: TITLE_CHARS - 1].rstrip() + "…"


def _turn(row: sqlite3.Row) -> StoredTurn:
    try:
        messages = json.loads(row["messages"])
        entries = [Entry.from_json(e) for e in json.loads(row["entries"])]
    except (ValueError, TypeError):
        # A row edited by hand: keep what the columns say plainly.
        messages = [{"role": "user", "content": row["user_text"]}] if row["user_text"] else []
        entries = [Entry("heard", row["user_text"], at=row["started"])] if row["user_text"] else []
    return StoredTurn(id=row["id"], started=row["started"], finished=row["finished"], user_text=row["user_text"],
                      messages=messages, entries=entries, interrupted=bool(row["interrupted"]))
