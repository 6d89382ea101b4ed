"""A qasync event loop for UI tests that also run the core: Qt and asyncio on one thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import leaks
import pytest
import qasync

from companion.ui.gc_guard import MainThreadCollector


class _AlwaysRunningLoop(qasync.QEventLoop):
    """In the app her loop runs as long as Qt does. A test runs it a piece at a time, but Qt
    steps its tasks in between too (pytest-qt after the test, qtbot's waits, run_until_complete's
    last pass of events): there they must find it running, or anyio and httpx fail half-way
    ("no running event loop") and leave a connection's task group behind."""

    def run_forever(self):
        try:
            return super().run_forever()
        finally:
            asyncio.events._set_running_loop(self)


@pytest.fixture(name="qt_loop")
def qt_loop_fixture(qapp) -> Iterator[Callable[[Coroutine[Any, Any, Any]], Any]]:
    """`run(coro)`: run a coroutine on a qasync loop (Qt events keep flowing while it waits)."""
    loop = _AlwaysRunningLoop(qapp)
    asyncio.set_event_loop(loop)
    asyncio.events._set_running_loop(loop)
    # As in the app: worker threads must never collect (and so destroy) a QObject.
    collector = MainThreadCollector()

    def run(coro: Coroutine[Any, Any, Any], timeout: float = 20.0) -> Any:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout))

    try:
        yield run
    finally:
        # What the test's apps did not end is ended here, on this loop, and fails the test.
        left = leaks.settle(loop)
        asyncio.events._set_running_loop(None)
        loop.close()
        asyncio.set_event_loop(None)
        collector.stop()
    if left:
        pytest.fail("left running on the Qt loop: " + "; ".join(leaks.describe_tasks(left)), pytrace=False)


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
