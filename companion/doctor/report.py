"""What a check found, and the report `companion doctor` prints from the checks.

Each check returns a Check; `essential` ones decide whether she can hold a spoken
conversation (the exit code). Checks never raise: a surprise becomes a failed Check.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    essential: bool = True
    """False for checks that only warn: she can still talk when they fail."""


CheckFn = Callable[[], Check | list[Check]]


def run_checks(checks: list[CheckFn]) -> list[Check]:
    results: list[Check] = []
    for fn in checks:
        try:
            outcome = fn()
        except Exception as exc:  # a doctor that crashes helps nobody
            outcome = Check(getattr(fn, "__name__", "check"), False, f"the check itself failed: {exc!r}")
        results.extend(outcome if isinstance(outcome, list) else [outcome])
    return results


def format_report(results: list[Check], color: bool = False) -> str:
    lines = []
    for check in results:
        mark = "ok  " if check.ok else ("FAIL" if check.essential else "warn")
        if color:
            code = "32" if check.ok else ("31" if check.essential else "33")
            mark = f"\033[{code}m{mark}\033[0m"
        lines.append(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok and check.fix:
            lines.append(f"       fix: {check.fix}")
    spoken = can_talk(results)
    lines.append("")
    lines.append("She can hold a spoken conversation." if spoken else
                 "She cannot hold a spoken conversation yet: fix the FAIL lines above.")
    return "\n".join(lines)


def can_talk(results: list[Check]) -> bool:
    return all(check.ok for check in results if check.essential)


def environment_color() -> bool:
    return sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
