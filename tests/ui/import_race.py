"""One start-up's imports, as the window does them, beside a thread that imports too.

Run as a script (tests/ui/test_ui_start_imports.py starts it many times). Qt's import hook is
active (PySide6 is imported first) and the core is imported the window's way
(`companion.ui.app_lifecycle.load_core`), while a second thread imports fresh modules, each keeping the
hook busy a little while it is read, as python-xlib's modules did when the global push-to-talk
key started beside the core. Prints "started", or the error as the window's banner would.

`--scripted`: the second thread imports once, at the worst moment: it is inside Qt's hook from
the start of `pydantic.errors` until `pydantic._internal._validators` is looked for, the
interleaving that failed one start in twenty (shibokensupport passes over the imports of other
threads while one is inside it). It waits for the moment, so without the fix every start fails.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

import PySide6.QtCore  # noqa: F401 (Qt's import hook, as in the window)

BUSY_MODULE = '''
import time

def __getattr__(name):
    if name == "__wrapped__":  # what Qt's hook asks every module it reads (inspect.unwrap)
        time.sleep(0.005)
    raise AttributeError(name)
'''

HELD_MODULE = '''
import import_race

def __getattr__(name):
    if name == "__wrapped__":  # Qt's hook is reading this module: stay inside it a while
        import_race.INSIDE.set()
        import_race.LEAVE.wait(10)
    raise AttributeError(name)
'''

ENTER, INSIDE, LEAVE, LEFT = (threading.Event() for _ in range(4))
MOMENT_S = 3.0
"""How long the core's import waits for the other thread to be inside the hook (with the fix
it never gets there: its import waits for the core's)."""


def keep_importing(folder: Path, importing: threading.Event, stop: threading.Event) -> None:
    """Import fresh modules from `folder` until `stop` (`importing` is set after the first)."""
    count = 0
    while not stop.is_set():
        name = f"busy_{count}"
        (folder / f"{name}.py").write_text(BUSY_MODULE, encoding="utf-8")
        __import__(name)  # the hook runs for `import` statements and __import__, not importlib
        importing.set()
        count += 1
        time.sleep(0.002)  # out of the hook a while between imports


def import_at_the_moment(folder: Path, importing: threading.Event, stop: threading.Event) -> None:
    (folder / "held_module.py").write_text(HELD_MODULE, encoding="utf-8")
    importing.set()
    ENTER.wait()
    if not stop.is_set():
        __import__("held_module")
    LEFT.set()


class TheMoment:
    """A finder that finds nothing: it only sees which module the core's import looks for."""

    def find_spec(self, name, path=None, target=None):
        if name == "pydantic.errors":
            ENTER.set()
            INSIDE.wait(MOMENT_S)
        elif name == "pydantic._internal._validators" and INSIDE.is_set():
            LEAVE.set()
            LEFT.wait(MOMENT_S)
        return None


def main() -> int:
    from companion.ui.app_lifecycle import load_core

    scripted = "--scripted" in sys.argv
    folder = Path(tempfile.mkdtemp(prefix="import-race-"))
    sys.path.insert(0, str(folder))
    sys.modules["import_race"] = sys.modules[__name__]
    if scripted:
        sys.meta_path.insert(0, TheMoment())
    importing, stop = threading.Event(), threading.Event()
    other = threading.Thread(target=import_at_the_moment if scripted else keep_importing,
                             args=(folder, importing, stop), daemon=True)
    other.start()
    importing.wait()  # the other thread is ready when the core starts to import
    try:
        asyncio.run(load_core())
    except Exception as exc:  # what the window would have shown in its banner
        print(f"I couldn't start: {exc}")
        return 1
    finally:
        stop.set()
        ENTER.set()
        LEAVE.set()
        other.join()
    print("started")
    return 0


if __name__ == "__main__":
    sys.exit(main())
