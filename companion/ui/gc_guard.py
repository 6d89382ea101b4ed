"""Python's cyclic garbage collection only on the Qt thread.

A reference cycle that holds a QObject, collected while a worker thread happens to allocate
(model loading, imports, transcription), would destroy that QObject on the worker thread
and crash Qt. So automatic collection is switched off and done here, on a timer, with the
same generation thresholds Python uses.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

CHECK_INTERVAL_MS = 500


class MainThreadCollector(QObject):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thresholds = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(CHECK_INTERVAL_MS)
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def check(self) -> None:
        """Collect the generations whose counts passed their thresholds (cheap when none did)."""
        young, middle, old = gc.get_count()
        if young > self._thresholds[0]:
            gc.collect(0)
            if middle > self._thresholds[1]:
                gc.collect(1)
                if old > self._thresholds[2]:
                    gc.collect(2)

    def stop(self) -> None:
        """Back to Python's own collection, after one full collection here."""
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
