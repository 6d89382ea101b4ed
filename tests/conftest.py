"""Shared test setup. Qt must render offscreen: set before anything imports PySide6."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
