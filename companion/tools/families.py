"""Which tool families a spoken conversation offers, and which of those only once she asks."""

from __future__ import annotations

COMPANION_TOOLSETS: frozenset[str] = frozenset(
    {"core", "memory", "file", "web", "cron", "terminal", "code"}
)
"""Families a live conversation turn may use; every other family is work mode only."""

ON_REQUEST_TOOLSETS: tuple[str, ...] = ("code", "file", "terminal")
"""Conversation families whose schemas join the tool list only once she asks for them
(use_tools) or calls one of their tools: they are half the list's tokens, and most turns
never touch the workspace. A call to one of their tools runs whether it was listed or not."""
