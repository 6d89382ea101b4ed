"""Closing her ends everything she started, on her own loop, before close() returns."""

from __future__ import annotations

import asyncio

from app_support import app_config


def test_a_second_close_returns_only_once_she_has_ended(make_app, qt_loop, tmp_path, scripted_brain):
    app = make_app(app_config(tmp_path, scripted_brain.url))

    async def quit_twice() -> bool:
        await app.start()
        first = asyncio.ensure_future(app.close())  # the tray's Quit
        await asyncio.ensure_future(app.close())  # the window's close, meanwhile
        ended = app.closed.is_set()
        await first
        return ended

    assert qt_loop(quit_twice())


def test_her_tasks_stepped_by_qt_between_two_runs_find_her_loop_running(qapp, qt_loop):
    async def needs_the_running_loop(woken: asyncio.Future) -> asyncio.AbstractEventLoop:
        await woken
        return asyncio.get_running_loop()  # as anyio and httpx ask at every step

    async def start():
        woken = asyncio.get_running_loop().create_future()
        return woken, asyncio.ensure_future(needs_the_running_loop(woken))

    woken, task = qt_loop(start())
    woken.set_result(None)  # between two runs, as an answer arriving over a socket would
    qapp.processEvents()  # as pytest-qt does after a test, and qtbot's waits do
    assert task.done() and task.result() is not None
