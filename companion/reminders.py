"""Reminders: a persisted list (reminders.toml in the data folder) and the scheduler that says them.

When one comes due she says it (Speak SAY) and the window shows it (ReminderDue). One that
fell due while the app was closed is told once at the next start; an interval reminder is
re-armed to its next time in the future. The clock and the sleep are injectable, so tests
move time by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tomllib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

import tomli_w

from companion.events import EventBus, ReminderDue, Speak, SpeechKind
from companion.paths import atomic_write_text

__all__ = ["Reminder", "ReminderScheduler", "ReminderStore", "describe_time", "local_now"]

log = logging.getLogger(__name__)

FILE_NAME = "reminders.toml"
MAX_WAIT_S = 60.0
"""The scheduler looks at the clock at least this often (sleep, suspend and clock changes)."""
MIN_INTERVAL_S = 60.0

Clock = Callable[[], datetime]
Sleep = Callable[[float], Awaitable[None]]


def local_now() -> datetime:
    return datetime.now().astimezone()


@dataclass(frozen=True)
class Reminder:
    id: str
    text: str
    due: datetime
    """When it next comes due (time-zone aware)."""
    every_s: float | None = None
    """Repeat interval in seconds; None for a one-off."""

    def next_after(self, now: datetime) -> Reminder | None:
        """The re-armed reminder (first time strictly after `now`), or None for a one-off."""
        if not self.every_s:
            return None
        step = timedelta(seconds=self.every_s)
        missed = (now - self.due) // step + 1 if now >= self.due else 0
        return replace(self, due=self.due + step * missed)


class ReminderStore:
    """The reminders file: read once, rewritten whole (atomically) on every change."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.notice: str | None = None
        self._items: dict[str, Reminder] = self._load()

    def all(self) -> list[Reminder]:
        return sorted(self._items.values(), key=lambda r: r.due)

    def add(self, text: str, due: datetime, every_s: float | None = None) -> Reminder:
        if due.tzinfo is None:
            raise ValueError("a reminder's time needs a time zone")
        reminder = Reminder(uuid.uuid4().hex[:6], text.strip(), due, every_s)
        self._items[reminder.id] = reminder
        self._save()
        return reminder

    def find(self, key: str) -> list[Reminder]:
        """Reminders whose id is `key`, or whose text contains it (case-insensitive)."""
        key = key.strip()
        if key in self._items:
            return [self._items[key]]
        lowered = key.lower()
        return [r for r in self.all() if lowered and lowered in r.text.lower()]

    def cancel(self, reminder_id: str) -> Reminder | None:
        removed = self._items.pop(reminder_id, None)
        if removed is not None:
            self._save()
        return removed

    def put(self, reminders: list[Reminder], removed: list[str]) -> None:
        """Replace and remove several reminders in one write."""
        for rid in removed:
            self._items.pop(rid, None)
        for reminder in reminders:
            self._items[reminder.id] = reminder
        self._save()

    def _save(self) -> None:
        rows = []
        for r in self.all():
            row: dict = {"id": r.id, "text": r.text, "due": r.due}
            if r.every_s:
                row["every_s"] = float(r.every_s)
            rows.append(row)
        atomic_write_text(self.path, tomli_w.dumps({"reminder": rows}))

    def _load(self) -> dict[str, Reminder]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            items = {}
            for row in tomllib.loads(text).get("reminder", []):
                due = row["due"]
                if not isinstance(due, datetime) or due.tzinfo is None:
                    raise ValueError(f"reminder {row.get('id')} has no time with a zone")
                every = row.get("every_s")
                reminder = Reminder(str(row["id"]), str(row["text"]), due, float(every) if every else None)
                items[reminder.id] = reminder
            return items
        except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
            backup = self.path.with_name(f"reminders.broken-{datetime.now():%Y%m%d-%H%M%S}.toml")
            os.replace(self.path, backup)
            log.warning("reminders file %s is broken (%s); moved to %s", self.path, exc, backup)
            self.notice = f"Your reminders file was broken, so I set it aside as {backup.name}."
            return {}


class ReminderScheduler:
    """Says reminders when they come due. Tools reach it as ctx.services["reminders"].

    `is_quiet` says whether she may speak up now; a reminder due mid-turn waits for
    `deliver_pending()` (the runtime calls it when the turn ends).
    """

    def __init__(self, store: ReminderStore, bus: EventBus, *, clock: Clock = local_now,
                 sleep: Sleep = asyncio.sleep, is_quiet: Callable[[], bool] = lambda: True,
                 say: Callable[[str], None] | None = None) -> None:
        """`say(sentence)` speaks a reminder (the runtime gives it a turn of its own; default:
        a Speak on the bus)."""
        self.store = store
        self.bus = bus
        self.clock = clock
        self.sleep = sleep
        self.is_quiet = is_quiet
        self._speak = say or (lambda sentence: bus.emit(Speak(SpeechKind.SAY, sentence)))
        self._changed = asyncio.Event()
        self._pending: list[tuple[Reminder, bool]] = []
        self._task: asyncio.Task[None] | None = None

    # --- what the tool uses ------------------------------------------------------------
    def add(self, text: str, due: datetime, every_s: float | None = None) -> Reminder:
        reminder = self.store.add(text, due, every_s)
        self._changed.set()
        return reminder

    def all(self) -> list[Reminder]:
        return self.store.all()

    def find(self, key: str) -> list[Reminder]:
        return self.store.find(key)

    def cancel(self, reminder_id: str) -> Reminder | None:
        removed = self.store.cancel(reminder_id)
        self._changed.set()
        return removed

    # --- running -----------------------------------------------------------------------
    def start(self, spawn: Callable[[Callable[[], Awaitable[None]]], asyncio.Task[None]] | None = None) -> None:
        """Tell what was missed while closed, then keep watching the clock in the background
        (`spawn(run)` starts the watching task, e.g. under a supervisor)."""
        self.catch_up()
        if self._task is None:
            self._task = spawn(self.run) if spawn is not None else asyncio.ensure_future(self.run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def catch_up(self, now: datetime | None = None) -> list[Reminder]:
        """Reminders that fell due while the app was closed: told once, then removed or re-armed."""
        return self._fire(now or self.clock(), missed=True)

    def fire_due(self, now: datetime | None = None) -> list[Reminder]:
        """Say every reminder due at `now`; one-offs are removed, intervals re-armed."""
        return self._fire(now or self.clock(), missed=False)

    async def run(self) -> None:
        while True:
            self.fire_due()
            self.deliver_pending()
            upcoming = self.store.all()
            wait = MAX_WAIT_S
            if upcoming:
                wait = min(wait, max(0.0, (upcoming[0].due - self.clock()).total_seconds()))
            self._changed.clear()
            sleeper = asyncio.ensure_future(self.sleep(wait))
            changed = asyncio.ensure_future(self._changed.wait())
            try:
                await asyncio.wait({sleeper, changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                changed.cancel()

    def deliver_pending(self) -> None:
        """Say the reminders that came due while she was busy, if she may speak now."""
        if not self._pending or not self.is_quiet():
            return
        pending, self._pending = self._pending, []
        for reminder, missed in pending:
            self._say(reminder, missed)

    def _fire(self, now: datetime, *, missed: bool) -> list[Reminder]:
        due = [r for r in self.store.all() if r.due <= now]
        if not due:
            return []
        rearmed = [n for n in (r.next_after(now) for r in due) if n is not None]
        self.store.put(rearmed, [r.id for r in due])  # saved before speaking: told once
        for reminder in due:
            self._pending.append((reminder, missed))
        self.deliver_pending()
        return due

    def _say(self, reminder: Reminder, missed: bool) -> None:
        if missed:
            sentence = (f"While I was closed, you had a reminder for {describe_time(reminder.due, self.clock())}: "
                        f"{reminder.text}")
        else:
            sentence = f"Reminder: {reminder.text}"
        self.bus.emit(ReminderDue(reminder.id, reminder.text, reminder.due.isoformat(), missed))
        self._speak(sentence)


def describe_time(when: datetime, now: datetime) -> str:
    """A spoken form of `when` relative to `now`: "3:30 PM", "tomorrow at 9:00 AM", "Tue 2 Dec at 9:00 AM"."""
    local = when.astimezone(now.tzinfo)
    clock = local.strftime("%I:%M %p").lstrip("0")
    days = (local.date() - now.date()).days
    if days == 0:
        return clock
    if days == 1:
        return f"tomorrow at {clock}"
    if days == -1:
        return f"yesterday at {clock}"
    return f"{local:%a} {local.day} {local:%b} at {clock}"
