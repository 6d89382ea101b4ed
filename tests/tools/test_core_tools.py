"""The core tools: get_time tells the real local time; todo keeps a per-session task list."""

from __future__ import annotations

import re
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from companion.tools.builtin import get_time, todo
from companion.tools.context import Session, ToolContext


@pytest.fixture
def ctx(tmp_path) -> ToolContext:
    return ToolContext(workspace=tmp_path / "ws", data_dir=tmp_path / "data")


@pytest.fixture
def local_zone(monkeypatch):
    """Switch this process's local time zone, and switch it back afterwards."""

    def use(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


def _day_and_date(zone: str) -> set[str]:
    now = datetime.now(ZoneInfo(zone))
    return {f"{now:%A}, {now.day} {now:%B %Y}"}


async def test_get_time_gives_the_local_weekday_date_time_and_zone(ctx, local_zone):
    local_zone("Asia/Tokyo")
    before = _day_and_date("Asia/Tokyo")
    answer = await get_time.execute({}, ctx)
    after = _day_and_date("Asia/Tokyo")
    assert any(day in answer for day in before | after), answer
    assert "Asia/Tokyo" in answer and "UTC+09:00" in answer and "JST" in answer
    shown = re.search(r", (\d\d):(\d\d) JST \(time zone", answer)
    assert shown is not None, answer
    now = datetime.now(ZoneInfo("Asia/Tokyo"))
    minutes_off = (now.hour * 60 + now.minute) - (int(shown[1]) * 60 + int(shown[2]))
    assert minutes_off % 1440 in (0, 1)
    assert not ctx.failed


async def test_get_time_follows_the_local_zone_when_it_changes(ctx, local_zone):
    local_zone("America/Sao_Paulo")
    answer = await get_time.execute({}, ctx)
    assert "America/Sao_Paulo" in answer and "UTC-03:00" in answer


async def test_get_time_can_tell_the_time_in_a_named_city(ctx):
    answer = await get_time.execute({"timezone": "new york"}, ctx)
    assert answer.startswith("In America/New_York it is ")
    assert any(day in answer for day in _day_and_date("America/New_York"))
    answer = await get_time.execute({"timezone": "Europe/Paris"}, ctx)
    assert answer.startswith("In Europe/Paris it is ")


async def test_get_time_says_so_when_it_does_not_know_a_zone(ctx):
    answer = await get_time.execute({"timezone": "Atlantis"}, ctx)
    assert "don't know a time zone called 'Atlantis'" in answer
    assert ctx.failed


async def test_get_time_refuses_a_zone_that_is_not_text(ctx):
    answer = await get_time.execute({"timezone": 9}, ctx)
    assert ctx.failed and "Europe/Paris" in answer


async def test_todo_adds_lists_completes_and_clears(ctx):
    assert await todo.execute({"action": "list"}, ctx) == "The list is empty."
    assert "Added task 1: buy milk" in await todo.execute({"action": "add", "text": "buy milk"}, ctx)
    await todo.execute({"action": "add", "text": "call   the plumber"}, ctx)
    await todo.execute({"action": "add", "text": "water the plants"}, ctx)
    done = await todo.execute({"action": "complete", "item": "2"}, ctx)
    assert done.startswith("Ticked off: call the plumber.") and "2 tasks left" in done
    done = await todo.execute({"action": "complete", "item": "plants"}, ctx)
    assert "Ticked off: water the plants" in done
    listing = await todo.execute({"action": "list"}, ctx)
    assert listing == (
        "3 tasks, 1 open:\n1. [ ] buy milk\n2. [x] call the plumber\n3. [x] water the plants"
    )
    assert "3 tasks removed" in await todo.execute({"action": "clear"}, ctx)
    assert ctx.session.todos == []
    assert not ctx.failed


async def test_todo_lives_in_the_session_it_was_given(tmp_path):
    first = ToolContext(workspace=tmp_path, data_dir=tmp_path, session=Session())
    second = ToolContext(workspace=tmp_path, data_dir=tmp_path, session=Session())
    await todo.execute({"action": "add", "text": "only here"}, first)
    assert await todo.execute({"action": "list"}, second) == "The list is empty."
    again = ToolContext(workspace=tmp_path, data_dir=tmp_path, session=first.session)
    assert "only here" in await todo.execute({"action": "list"}, again)


async def test_todo_asks_for_a_number_when_words_match_several_tasks(ctx):
    await todo.execute({"action": "add", "text": "email Anna"}, ctx)
    await todo.execute({"action": "add", "text": "email Bob"}, ctx)
    answer = await todo.execute({"action": "complete", "item": "email"}, ctx)
    assert answer == "2 tasks match 'email'; tell me its number instead."
    assert ctx.failed
    assert all(not t["done"] for t in ctx.session.todos)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"action": "fly"}, "I can only add, list, complete or clear tasks."),
        ({}, "I can only add, list, complete or clear tasks."),
        ({"action": "add"}, "Tell me what the task is, and I'll add it."),
        ({"action": "add", "text": "x" * 501}, "That task is too long; keep it under 500 characters."),
        ({"action": "complete", "item": "1"}, "The list is empty, so there is nothing to tick off."),
    ],
)
async def test_todo_answers_bad_requests_with_a_sentence(ctx, args, expected):
    assert await todo.execute(args, ctx) == expected
    assert ctx.failed


async def test_todo_says_which_numbers_exist(ctx):
    await todo.execute({"action": "add", "text": "one"}, ctx)
    assert await todo.execute({"action": "complete", "item": 5}, ctx) == (
        "There is no task 5; the list has 1 task."
    )


async def test_todo_list_is_capped(ctx):
    for i in range(todo.MAX_ITEMS):
        await todo.execute({"action": "add", "text": f"task {i}"}, ctx)
    assert not ctx.failed
    answer = await todo.execute({"action": "add", "text": "one too many"}, ctx)
    assert "already has 100 tasks" in answer and ctx.failed
    assert len(ctx.session.todos) == todo.MAX_ITEMS
