"""reminder — add, list and cancel reminders (at a time, in N minutes, or every interval); she says them when due."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from companion.reminders import MIN_INTERVAL_S, ReminderStore, describe_time, local_now

SCHEMA = {
    "type": "function",
    "name": "reminder",
    "description": (
        "Reminders the user asks for. action=add with text and either at (a local time like "
        "'15:30', '3pm' or '2026-12-01 09:00') or in_minutes; add every_minutes to repeat. "
        "action=list shows them; action=cancel removes one by its id or words from its text."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "list", "cancel"]},
            "text": {"type": "string", "description": "What to remind about (add)."},
            "at": {"type": "string", "description": "Local time or date and time (add)."},
            "in_minutes": {"type": "number", "description": "Minutes from now (add)."},
            "every_minutes": {"type": "number", "description": "Repeat interval in minutes (add)."},
            "id": {"type": "string", "description": "The reminder's id, or words from its text (cancel)."},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}
TOOLSET = "cron"
RISK = "read"  # it keeps only her own reminder list (the data folder), never your files

ANNOUNCE = "Let me check my reminder list."
HEARTBEAT = ["Still sorting out the reminder..."]
COMPLETE = "Reminders updated."
FAIL = "I couldn't set that reminder."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}

_CLOCK_TIME = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?$", re.I)


async def execute(args: dict, ctx) -> str:
    args = args if isinstance(args, dict) else {}
    reminders = ctx.services.get("reminders") or ReminderStore(ctx.data_dir / "reminders.toml")
    clock = getattr(reminders, "clock", local_now)
    now = clock()
    action = args.get("action")
    if action == "list":
        return _listing(reminders.all(), now)
    if action == "cancel":
        key = args.get("id")
        if not isinstance(key, str) or not key.strip():
            return ctx.fail("Tell me which reminder to cancel: its id or some words from it.")
        found = reminders.find(key)
        if not found:
            return ctx.fail(f"I have no reminder matching {key.strip()!r}.")
        if len(found) > 1:
            return ctx.fail("More than one reminder matches; which one?\n" + _listing(found, now))
        reminders.cancel(found[0].id)
        return f"Cancelled the reminder {found[0].text!r}."
    if action != "add":
        return ctx.fail("action must be add, list or cancel.")
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        return ctx.fail("What should I remind you about?")
    every = args.get("every_minutes")
    if every is not None and (not _number(every) or every * 60 < MIN_INTERVAL_S):
        return ctx.fail("every_minutes must be a number of at least 1.")
    at, minutes = args.get("at"), args.get("in_minutes")
    if at is not None and minutes is not None:
        return ctx.fail("Give either at or in_minutes, not both.")
    if at is not None:
        due = parse_when(at, now)
        if due is None:
            return ctx.fail(f"I don't understand the time {at!r}; say it like 15:30, 3pm or 2026-12-01 09:00.")
        if due <= now:
            return ctx.fail(f"{describe_time(due, now)} has already passed.")
    elif minutes is not None:
        if not _number(minutes) or minutes <= 0:
            return ctx.fail("in_minutes must be a number above 0.")
        due = now + timedelta(minutes=minutes)
    elif every is not None:
        due = now + timedelta(minutes=every)
    else:
        return ctx.fail("When should I remind you? Give at (a time) or in_minutes.")
    added = reminders.add(text, due, every * 60 if every else None)
    repeat = f", then every {_minutes(every)}" if every else ""
    return f"I'll remind you {describe_time(added.due, now)}{repeat}: {added.text} (id {added.id})."


def parse_when(value: object, now: datetime) -> datetime | None:
    """A local time ("15:30", "3pm": the next one) or an ISO date and time, made time-zone aware."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    match = _CLOCK_TIME.match(text)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        suffix = (match.group(3) or "").lower().replace(".", "")
        if suffix and not 1 <= hour <= 12:
            return None
        if suffix == "pm" and hour != 12:
            hour += 12
        elif suffix == "am" and hour == 12:
            hour = 0
        if hour > 23 or minute > 59:
            return None
        when = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return when if when > now else when + timedelta(days=1)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when.replace(tzinfo=now.tzinfo) if when.tzinfo is None else when


def _listing(items: list, now: datetime) -> str:
    if not items:
        return "You have no reminders."
    lines = [f"You have {len(items)} reminder{'s' if len(items) != 1 else ''}:"]
    for r in items:
        repeat = f", every {_minutes(r.every_s / 60)}" if r.every_s else ""
        lines.append(f"- {r.text} — {describe_time(r.due, now)}{repeat} (id {r.id})")
    return "\n".join(lines)


def _minutes(value: float) -> str:
    if value % 60 == 0:
        hours = int(value // 60)
        return "hour" if hours == 1 else f"{hours} hours"
    return "minute" if value == 1 else f"{value:g} minutes"


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
