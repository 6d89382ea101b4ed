"""A qasync event loop for UI tests that also run the core: Qt and asyncio on one thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest
import qasync

from companion.ui.gc_guard import MainThreadCollector


@pytest.fixture(name="qt_loop")
def qt_loop_fixture(qapp) -> Iterator[Callable[[Coroutine[Any, Any, Any]], Any]]:
    """`run(coro)`: run a coroutine on a qasync loop (Qt events keep flowing while it waits)."""
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    # As in the app: worker threads must never collect (and so destroy) a QObject.
    collector = MainThreadCollector()

    def run(coro: Coroutine[Any, Any, Any], timeout: float = 20.0) -> Any:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout))

    try:
        yield run
    finally:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()
        asyncio.set_event_loop(None)
        collector.stop()


def signal_future(signal) -> asyncio.Future:
    """A future that gets the arguments of the next emission of a Qt `signal`."""
    future: asyncio.Future = asyncio.get_running_loop().create_future()

    def fire(*args: Any) -> None:
        if not future.done():
            future.set_result(args)

    signal.connect(fire)
    future.add_done_callback(lambda _f: signal.disconnect(fire))
    return future


@pytest.fixture(name="qt_gc")
def qt_gc_fixture(qapp) -> Iterator[MainThreadCollector]:
    """Garbage collection on the Qt event loop's timer only, as in the app (see gc_guard)."""
    collector = MainThreadCollector()
    try:
        yield collector
    finally:
        collector.stop()
