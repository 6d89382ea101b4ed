"""Her log: every trace in a rotating file, and at most one plain line on the terminal."""

from __future__ import annotations

import logging
import sys
import threading
from logging.handlers import RotatingFileHandler
from pathlib import Path

from platformdirs import user_state_dir

from companion.errors import shown_path
from companion.paths import APP_NAME, default_data_dir

__all__ = ["LOG_NAME", "current_log_file", "details_hint", "log_file", "setup_logging", "shown"]

LOG_NAME = "companion.log"
MAX_BYTES = 1_000_000
"""One file's size before it rotates (companion.log.1 … .3 keep the older ones)."""
BACKUPS = 3
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_file(data_dir: Path) -> Path:
    """Where the log goes: the user's state folder (~/.local/state/companion/companion.log), or
    beside her data when a profile keeps everything in one folder (--config-dir)."""
    if Path(data_dir) == default_data_dir():
        return Path(user_state_dir(APP_NAME, appauthor=False)) / LOG_NAME
    return Path(data_dir) / LOG_NAME


class _OneLine(logging.Formatter):
    """The terminal gets the message's first line alone: the trace is the file's."""

    def __init__(self, hint: str) -> None:
        super().__init__()
        self._hint = hint

    def format(self, record: logging.LogRecord) -> str:
        message = (record.getMessage().strip().splitlines() or [record.levelname])[0]
        return f"companion: {message}{self._hint if record.exc_info else ''}"


class _LogFile(RotatingFileHandler):
    """Marks the handler this module added, so `current_log_file()` finds it again."""

    _complained = False

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        # A full or vanished disk must not print logging's own traceback into the chat: one
        # line, once, and the records are dropped.
        if not self._complained:
            self._complained = True
            kind, exc, _ = sys.exc_info()
            why = getattr(exc, "strerror", None) or (kind.__name__ if kind else "an error")
            sys.stderr.write(f"companion: I can't write my log to {shown(Path(self.baseFilename))} ({why}).\n")


class _Console(logging.StreamHandler):
    """The terminal's handler this module added (replaced, never stacked, when set up again)."""


def setup_logging(data_dir: Path, *, verbose: bool = False) -> Path | None:
    """Send every record (with its trace) to the rotating log file and, on the terminal, only
    errors as one line each (everything, traces too, with -v). Returns the file, or None when
    it can't be created (a read-only disk): then warnings reach the terminal, still one line each."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _LogFile | _Console)]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    path = log_file(data_dir)
    file_handler: logging.Handler | None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = _LogFile(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError:
        file_handler = None
    if file_handler is not None:
        file_handler.setFormatter(logging.Formatter(_FORMAT))
        root.addHandler(file_handler)
    console = _Console(sys.stderr)
    if verbose:
        console.setLevel(logging.DEBUG)
        console.setFormatter(logging.Formatter(_FORMAT))
    elif file_handler is not None:
        console.setLevel(logging.ERROR)
        console.setFormatter(_OneLine(f" (details: {shown(path)})"))
    else:
        console.setLevel(logging.WARNING)
        console.setFormatter(_OneLine(""))
    root.addHandler(console)
    if not verbose:
        _catch_uncaught()
    # Libraries that chatter at INFO (HTTP clients, the MCP SDK) stay out of her log.
    for name in ("httpx", "httpcore", "mcp", "asyncio"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)
    return path if file_handler is not None else None


def _catch_uncaught() -> None:
    """A failure nothing else caught is still one line on the terminal, its trace in the file."""
    log = logging.getLogger("companion")

    def uncaught(kind, exc, trace) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, exc, trace)
            return
        log.critical("something went wrong: %s", exc or kind.__name__, exc_info=(kind, exc, trace))

    def uncaught_in_thread(args) -> None:
        if args.exc_type is not SystemExit:
            uncaught(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = uncaught
    threading.excepthook = uncaught_in_thread


def current_log_file() -> Path | None:
    """The file `setup_logging` is writing to, if any (None in tests that never set it up)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, _LogFile):
            return Path(handler.baseFilename)
    return None


def details_hint() -> str:
    """" The details are in ~/.local/state/companion/companion.log." or "" without a log file."""
    path = current_log_file()
    return f" The details are in {shown(path)}." if path is not None else ""


def shown(path: Path) -> str:
    """A path as the user reads it: under the home folder with ~."""
    return shown_path(path)
