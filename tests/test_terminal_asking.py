"""Asking on the terminal: y / n / a, expiry, and `unavailable` when there is no terminal."""

from __future__ import annotations

import io
import os
import pty
from collections.abc import Iterator

import pytest

from companion.safety.approval import ApprovalRequest, Decision
from companion.safety.terminal import TerminalApprover


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    master, slave = pty.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


def request(saveable: bool = True, timeout_s: float = 30.0) -> ApprovalRequest:
    return ApprovalRequest("rm -rf build", "That deletes folders.", saveable, timeout_s)


@pytest.mark.parametrize(("typed", "decision", "always"), [
    (b"y\n", Decision.APPROVED, False),
    (b"yes\n", Decision.APPROVED, False),
    (b"n\n", Decision.DECLINED, False),
    (b"a\n", Decision.APPROVED, True),
    (b"maybe\nN\n", Decision.DECLINED, False),
])
async def test_an_answer_typed_on_the_terminal_decides(terminal, typed: bytes, decision: Decision,
                                                       always: bool) -> None:
    master, slave = terminal
    out = io.StringIO()
    os.write(master, typed)
    answer = await TerminalApprover(slave, out).ask(request())
    assert (answer.decision, answer.always) == (decision, always)
    assert "rm -rf build" in out.getvalue() and "[a]lways" in out.getvalue()


async def test_always_is_not_offered_for_a_line_that_always_asks(terminal) -> None:
    master, slave = terminal
    out = io.StringIO()
    os.write(master, b"a\ny\n")
    answer = await TerminalApprover(slave, out).ask(request(saveable=False))
    assert (answer.decision, answer.always) == (Decision.APPROVED, False)
    assert "always asks" in out.getvalue()


async def test_no_answer_in_time_expires(terminal) -> None:
    _, slave = terminal
    out = io.StringIO()
    answer = await TerminalApprover(slave, out).ask(request(timeout_s=0.1))
    assert answer.decision is Decision.EXPIRED
    assert "No answer in time" in out.getvalue()


async def test_after_expiry_the_next_line_is_not_eaten(terminal) -> None:
    master, slave = terminal
    approver = TerminalApprover(slave, io.StringIO())
    assert (await approver.ask(request(timeout_s=0.05))).decision is Decision.EXPIRED
    os.write(master, b"n\n")
    assert (await approver.ask(request())).decision is Decision.DECLINED


async def test_without_a_terminal_the_request_is_unavailable() -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"y\n")  # piped input is never taken as consent
        answer = await TerminalApprover(read_end, io.StringIO()).ask(request())
        assert answer.decision is Decision.UNAVAILABLE
    finally:
        os.close(read_end)
        os.close(write_end)


async def test_while_chat_reads_the_terminal_itself_a_line_it_offers_answers_the_question(terminal) -> None:
    import asyncio

    _, slave = terminal
    approver = TerminalApprover(slave, io.StringIO())
    approver.reading_elsewhere = True
    assert approver.offer("hello\n") is False  # nothing pending: an ordinary message
    question = asyncio.ensure_future(approver.ask(request()))
    while not approver.offer("y\n"):
        await asyncio.sleep(0)  # let the question reach its wait
    assert (await question).decision is Decision.APPROVED
