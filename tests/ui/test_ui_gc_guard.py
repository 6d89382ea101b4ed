"""Reference cycles holding QObjects are collected on the Qt thread, never on a worker."""

from __future__ import annotations

import gc
import threading

from PySide6.QtCore import QObject, Qt

from companion.ui.gc_guard import MainThreadCollector


class _Holder:
    """Part of a reference cycle that keeps a QObject alive until the cycle is collected."""

    def __init__(self) -> None:
        self.me = self
        self.obj = QObject()


def test_a_cycle_holding_a_qobject_is_collected_on_the_qt_thread_not_on_a_worker(qapp):
    collector = MainThreadCollector()
    try:
        holder = _Holder()
        destroyed_on: list[int] = []
        # Direct: the callback runs on whichever thread destroys the object.
        holder.obj.destroyed.connect(lambda: destroyed_on.append(threading.get_ident()),
                                     Qt.ConnectionType.DirectConnection)
        del holder

        def allocate() -> None:
            # Enough new container objects to pass generation 0's threshold many times over.
            junk = [[i] for i in range(gc.get_threshold()[0] * 20)]
            del junk

        worker = threading.Thread(target=allocate)
        worker.start()
        worker.join()
        assert destroyed_on == []  # the worker's allocations collected nothing
        collector.check()
        gc.collect()  # what the timer's collection reaches, at the latest on stop()
        assert destroyed_on == [threading.get_ident()]
    finally:
        collector.stop()
    assert gc.isenabled()
