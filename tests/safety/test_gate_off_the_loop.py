"""Issue 25, part 7 (gate side): the gate's checks never stall the event loop. Wildcards are
expanded in a worker thread, bounded in time and matches, and past the bound the answer is a
clear "too many files" question rather than a frozen window."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from companion.safety.command_line.rules import GLOB_TIME_S, TOO_MANY_FILES
from companion.safety.consent.approval import Answer, ApprovalRequest, Decision
from companion.safety.gate import Gate
from companion.safety.grants import GrantStore

LINKS = 8
"""Links to `.`: `*/*/*/*/*` names 8**5 = 32,768 paths (one level more: 262,144)."""


class Declines:
    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(Decision.DECLINED)


async def _longest_stall_during(work) -> tuple[object, float, float]:
    """Run `work` while a 10 ms heartbeat ticks; (its result, the loop's longest stall, seconds)."""
    loop = asyncio.get_running_loop()
    stalls: list[float] = []
    done = asyncio.Event()

    async def heartbeat() -> None:
        last = loop.time()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = loop.time()
            stalls.append(now - last - 0.01)
            last = now

    beat = asyncio.ensure_future(heartbeat())
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(work, 30)
    finally:
        done.set()
        await beat
    return result, max(stalls, default=0.0), time.monotonic() - started


async def test_a_wildcard_over_a_link_farm_answers_in_bounded_time_while_the_loop_keeps_ticking(
        tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for i in range(LINKS):
        (workspace / f"l{i}").symlink_to(".")
    gate = Gate(workspace, GrantStore(tmp_path / "approvals.toml"), approver=Declines())
    for line in ("ls */*/*/*/*", "ls */*/*/*/*/*"):
        verdict, stall, seconds = await _longest_stall_during(gate.review(line))
        asked = gate.approver.asked[-1]
        assert asked.reason == TOO_MANY_FILES and not asked.saveable
        assert not verdict.allowed
        # The old gate froze the app ~5 s on the first line and 45-67 s on the second; a
        # busy machine may hold the loop's thread a few hundred ms on its own.
        assert stall < 1.0, f"the loop stalled {stall * 1000:.0f} ms"
        assert seconds < GLOB_TIME_S + 5.0


async def test_a_small_wildcard_is_still_judged_and_auto_safe(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "a.txt").write_text("a\n")
    gate = Gate(workspace, GrantStore(tmp_path / "approvals.toml"), approver=Declines())
    verdict = await gate.review("cat sub/*.txt")
    assert verdict.allowed and verdict.how == "auto-safe" and not gate.approver.asked
