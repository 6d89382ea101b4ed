"""Reminders: the tool, persistence across restarts, due and missed reminders, intervals; time moved by hand."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from companion.events import EventBus, ReminderDue, Speak, SpeechKind
from companion.reminders import ReminderScheduler, ReminderStore
from companion.tools.builtin import reminder
from companion.tools.builtin.reminder import parse_when
from companion.tools.context import ToolContext

ZONE = timezone(timedelta(hours=1))
START = datetime(2026, 11, 30, 14, 0, tzinfo=ZONE)


class FakeClock:
    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Time passes instantly: the scheduler's wait moves the clock instead of the test waiting."""
        self.now += timedelta(seconds=seconds)
        await asyncio.sleep(0)


class Heard:
    def __init__(self, bus: EventBus) -> None:
        self.said: list[str] = []
        self.due: list[ReminderDue] = []
        self.spoke = asyncio.Event()
        bus.subscribe(self)

    def __call__(self, event) -> None:
        if isinstance(event, Speak) and event.kind is SpeechKind.SAY:
            self.said.append(event.text)
            self.spoke.set()
        elif isinstance(event, ReminderDue):
            self.due.append(event)


def scheduler(path: Path, clock: FakeClock, **kwargs) -> tuple[ReminderScheduler, Heard]:
    bus = EventBus()
    heard = Heard(bus)
    return ReminderScheduler(ReminderStore(path), bus, clock=clock, sleep=clock.sleep, **kwargs), heard


async def call(sched: ReminderScheduler, tmp_path: Path, **args) -> tuple[str, ToolContext]:
    ctx = ToolContext(workspace=tmp_path, data_dir=tmp_path, services={"reminders": sched})
    return await reminder.execute(args, ctx), ctx


async def test_a_reminder_added_in_minutes_is_listed_and_survives_a_restart(tmp_path: Path) -> None:
    clock = FakeClock()
    sched, _ = scheduler(tmp_path / "reminders.toml", clock)
    text, ctx = await call(sched, tmp_path, action="add", text="stretch", in_minutes=30)
    assert not ctx.failed and "2:30 PM" in text and "stretch" in text
    again, _ = scheduler(tmp_path / "reminders.toml", clock)  # a new start reads the file
    listing, _ = await call(again, tmp_path, action="list")
    assert "You have 1 reminder:" in listing and "stretch — 2:30 PM" in listing


async def test_a_due_reminder_is_said_once_and_removed(tmp_path: Path) -> None:
    clock = FakeClock()
    sched, heard = scheduler(tmp_path / "reminders.toml", clock)
    sched.add("call mum", START + timedelta(minutes=10))
    assert sched.fire_due(START + timedelta(minutes=9)) == []
    clock.now = START + timedelta(minutes=10)
    sched.fire_due()
    sched.fire_due()
    assert heard.said == ["Reminder: call mum"]
    assert [(d.text, d.missed) for d in heard.due] == [("call mum", False)]
    assert ReminderStore(tmp_path / "reminders.toml").all() == []


async def test_an_interval_reminder_re_arms_after_each_time(tmp_path: Path) -> None:
    clock = FakeClock()
    sched, heard = scheduler(tmp_path / "reminders.toml", clock)
    text, _ = await call(sched, tmp_path, action="add", text="drink water", every_minutes=60)
    assert "then every hour" in text
    clock.now = START + timedelta(hours=1, minutes=5)
    sched.fire_due()
    assert ReminderStore(tmp_path / "reminders.toml").all()[0].due == START + timedelta(hours=2)
    clock.now = START + timedelta(hours=2)
    sched.fire_due()
    assert heard.said == ["Reminder: drink water"] * 2


async def test_reminders_missed_while_closed_are_told_once_at_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / "reminders.toml"
    first, _ = scheduler(path, FakeClock())
    first.add("take the bins out", START + timedelta(minutes=5))
    first.add("stand up", START + timedelta(minutes=10), every_s=3600)
    first.add("later thing", START + timedelta(days=2))
    # The app was closed; it starts again three and a half hours later.
    later = FakeClock(START + timedelta(hours=3, minutes=30))
    second, heard = scheduler(path, later)
    second.catch_up()
    assert len(heard.said) == 2
    assert heard.said[0] == "While I was closed, you had a reminder for 2:05 PM: take the bins out"
    assert "stand up" in heard.said[1] and all(d.missed for d in heard.due)
    left = {r.text: r.due for r in ReminderStore(path).all()}
    assert left == {"stand up": START + timedelta(hours=4, minutes=10), "later thing": START + timedelta(days=2)}
    third, heard_again = scheduler(path, later)
    third.catch_up()
    assert heard_again.said == []


async def test_a_reminder_due_while_she_is_busy_waits_for_a_quiet_moment(tmp_path: Path) -> None:
    busy = True
    sched, heard = scheduler(tmp_path / "reminders.toml", FakeClock(), is_quiet=lambda: not busy)
    sched.add("tea", START)
    sched.fire_due()
    assert heard.said == []
    busy = False
    sched.deliver_pending()
    assert heard.said == ["Reminder: tea"]


async def test_the_running_scheduler_says_a_reminder_when_its_time_comes(tmp_path: Path) -> None:
    clock = FakeClock()
    sched, heard = scheduler(tmp_path / "reminders.toml", clock)
    sched.start()
    try:
        await call(sched, tmp_path, action="add", text="check the oven", in_minutes=25)
        await asyncio.wait_for(heard.spoke.wait(), 5)
    finally:
        await sched.stop()
    assert heard.said == ["Reminder: check the oven"]
    assert clock.now >= START + timedelta(minutes=25)


async def test_cancel_by_id_or_by_words(tmp_path: Path) -> None:
    sched, _ = scheduler(tmp_path / "reminders.toml", FakeClock())
    first = sched.add("water the plants", START + timedelta(hours=1))
    sched.add("water the garden", START + timedelta(hours=2))
    text, ctx = await call(sched, tmp_path, action="cancel", id="water")
    assert ctx.failed and "More than one" in text
    text, _ = await call(sched, tmp_path, action="cancel", id=first.id)
    assert "water the plants" in text
    text, _ = await call(sched, tmp_path, action="cancel", id="garden")
    assert "water the garden" in text and sched.all() == []


@pytest.mark.parametrize(("args", "expected"), [
    ({"action": "add", "text": "x"}, "When should I remind you?"),
    ({"action": "add", "text": "x", "at": "13:00"}, None),  # next 13:00 is tomorrow: fine
    ({"action": "add", "text": "x", "at": "2026-11-30T13:00"}, "already passed"),
    ({"action": "add", "text": "x", "at": "half past never"}, "don't understand the time"),
    ({"action": "add", "text": "x", "in_minutes": -5}, "above 0"),
    ({"action": "add", "text": "x", "in_minutes": 5, "at": "15:00"}, "not both"),
    ({"action": "add", "text": "x", "in_minutes": 5, "every_minutes": 0.1}, "at least 1"),
    ({"action": "add", "at": "15:00"}, "What should I remind you about?"),
    ({"action": "fly"}, "add, list or cancel"),
])
async def test_bad_requests_get_a_sentence(tmp_path: Path, args: dict, expected: str | None) -> None:
    sched, _ = scheduler(tmp_path / "reminders.toml", FakeClock())
    text, ctx = await call(sched, tmp_path, **args)
    if expected is None:
        assert not ctx.failed and "tomorrow at 1:00 PM" in text
    else:
        assert ctx.failed and expected in text


@pytest.mark.parametrize(("value", "expected"), [
    ("15:30", START.replace(hour=15, minute=30)),
    ("3pm", START.replace(hour=15)),
    ("9 a.m.", START.replace(hour=9) + timedelta(days=1)),
    ("12am", START.replace(hour=0) + timedelta(days=1)),
    ("2026-12-01 09:00", datetime(2026, 12, 1, 9, 0, tzinfo=ZONE)),
    ("2026-12-01T09:00:00+00:00", datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
    ("25:00", None), ("13pm", None), ("soon", None),
])
def test_times_are_read_as_the_next_such_local_time(value: str, expected: datetime | None) -> None:
    assert parse_when(value, START) == expected


async def test_without_a_scheduler_the_tool_still_persists_to_the_data_folder(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, data_dir=tmp_path)
    text = await reminder.execute({"action": "add", "text": "stretch", "in_minutes": 5}, ctx)
    assert not ctx.failed and "stretch" in text
    assert [r.text for r in ReminderStore(tmp_path / "reminders.toml").all()] == ["stretch"]


def test_a_broken_reminders_file_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "reminders.toml"
    path.write_text("[[reminder]]\nid = 1\n")
    store = ReminderStore(path)
    assert store.all() == [] and store.notice and not path.exists()


async def test_the_companion_tells_missed_reminders_when_it_starts(tmp_path: Path) -> None:
    from brain_harness import make_config

    from companion.runtime import Companion

    config = make_config(tmp_path, "http://127.0.0.1:9/v1")
    past = datetime.now().astimezone() - timedelta(hours=2)
    ReminderStore(config.paths.data_dir / "reminders.toml").add("feed the cat", past)
    bus = EventBus()
    heard = Heard(bus)
    companion = Companion(config, bus)
    await companion.start()
    try:
        assert len(heard.said) == 1 and heard.said[0].startswith("While I was closed")
        assert heard.said[0].endswith("feed the cat")
        assert companion.services["reminders"].all() == []
    finally:
        await companion.close()
