"""The context a tool's `execute(args, ctx)` receives: where, how, how long, and how to fail."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any


class Mode(StrEnum):
    COMPANION = "companion"
    WORK = "work"


class Channel(StrEnum):
    VOICE = "voice"
    TEXT = "text"


@dataclass
class Session:
    """State that lives as long as one conversation (the todo list, the work job, …)."""

    todos: list[dict[str, Any]] = field(default_factory=list)
    open_toolsets: list[str] = field(default_factory=list)
    """On-request tool families listed on conversation turns, in the order they were opened."""
    extras: dict[str, Any] = field(default_factory=dict)
    """Room for later features keyed by their name; prefer a typed field once one settles."""


@dataclass
class ToolContext:
    """One per tool call. Fields a caller does not set get safe defaults."""

    workspace: Path
    """The jail: file and shell tools never act outside it."""
    data_dir: Path
    """The user's data dir (memory/, reminders, …)."""
    mode: Mode = Mode.COMPANION
    channel: Channel = Channel.TEXT
    budget_s: float = 60.0
    """How long this call may work; tools bound their own work by it."""
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    session: Session = field(default_factory=Session)
    services: dict[str, Any] = field(default_factory=dict)
    """Shared services by name: "gate" (approval gate), "personality", "work", "settings"…"""
    failure: str | None = None
    refusal: str | None = None
    tool: str = ""
    """The name of the tool this call runs (set by the turn loop from the registry)."""
    risk: str = "read"
    """That tool's RISK from the registry; the gate starts programs only for `exec`."""
    hold_budget: Callable[[float], None] = field(default=lambda seconds: None)
    """Move the turn loop's deadline for this call by `seconds` (negative gives time back);
    the approval gate uses it so time spent waiting for the user is not counted."""

    def fail(self, sentence: str) -> str:
        """Mark this call as failed and return `sentence`, so a tool can `return ctx.fail(...)`."""
        self.failure = sentence
        return sentence

    def refuse(self, sentence: str) -> str:
        """Mark this call as refused (ran nothing: the approval gate said no, or nobody answered).

        A refused call is reported as Outcome.REFUSED and says neither COMPLETE nor FAIL.
        """
        self.refusal = sentence
        return sentence

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def refused(self) -> bool:
        return self.refusal is not None and self.failure is None

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()
