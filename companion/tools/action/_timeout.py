"""The `timeout` argument shared by the tools that run processes (shell, execute_code)."""

from __future__ import annotations

from typing import Any

MAX_TIMEOUT_S = 600
TIMEOUT_PARAMETER = {
    "type": "integer",
    "description": "Seconds before it is stopped (default and maximum: this turn's budget).",
    "minimum": 1,
}


def pick_timeout(args: dict[str, Any], budget_s: float) -> tuple[int, int]:
    """(timeout, budget) in whole seconds: the asked-for timeout, never above the turn's budget.

    Raises ValueError with a sentence for a timeout that is not a whole number from 1 up.
    """
    budget = max(1, int(min(budget_s, MAX_TIMEOUT_S)))
    wanted = args.get("timeout")
    if wanted is not None and (not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 1):
        raise ValueError("timeout must be a whole number of seconds from 1 up.")
    return min(wanted or budget, budget), budget
