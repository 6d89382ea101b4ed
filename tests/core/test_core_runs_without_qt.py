"""The core (everything outside companion/ui) imports and runs with no Qt installed."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import companion


def _core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(companion.__path__, prefix="companion."):
        if info.name.startswith(("companion.ui", "companion.share")):
            continue
        names.append(info.name)
    return names


def test_every_core_module_imports_with_qt_blocked():
    modules = _core_modules()
    assert "companion.tools.registry" in modules
    script = (
        "import sys; sys.modules['PySide6'] = None; sys.modules['qasync'] = None\n"
        "import importlib\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_core_never_imports_the_command_line():
    """One-way door: cli builds a RunConfig (companion.config); the core only reads it."""
    modules = [m for m in _core_modules() if not m.startswith(("companion.cli", "companion.commands"))]
    script = (
        "import sys; sys.modules['companion.cli'] = None; sys.modules['companion.commands'] = None\n"
        "import importlib\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "from companion.runtime import Companion\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
