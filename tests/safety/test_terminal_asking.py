"""Asking on the terminal: y / n / a, expiry, and `unavailable` when there is no terminal."""

from __future__ import annotations

import io
import os
import pty
from collections.abc import Iterator

import pytest

from companion.safety.consent.approval import ApprovalRequest, Decision
from companion.safety.consent.terminal import TerminalApprover


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


async def asked(terminal, *requests: ApprovalRequest):
    """An approver whose lines come from chat's reader (as in `companion chat`), with `requests`
    pending on it in order: (approver, what it printed, the questions)."""
    import asyncio

    _, slave = terminal
    out = io.StringIO()
    approver = TerminalApprover(slave, out)
    approver.reading_elsewhere = True
    questions = [asyncio.ensure_future(approver.ask(r)) for r in requests]
    while approver.waiting < len(requests):
        await asyncio.sleep(0)  # let every question reach its wait
    return approver, out, questions


def writes(command: str) -> ApprovalRequest:
    return ApprovalRequest(command, "Writes.", True, 30.0)


async def test_a_second_question_waits_visibly_and_is_shown_once_the_first_is_answered(terminal) -> None:
    approver, out, (first, second) = await asked(terminal, writes("touch one"), writes("touch two"))
    assert "1 more question waiting" in out.getvalue()
    assert "touch two" not in out.getvalue()  # only the first is shown
    assert approver.offer("n\n")
    assert (await first).decision is Decision.DECLINED
    assert "touch two" in out.getvalue()
    assert approver.offer("y\n")
    assert (await second).decision is Decision.APPROVED
    assert approver.waiting == 0 and approver.offer("y\n") is False  # nothing pending: a message again


async def test_while_a_question_is_pending_every_line_goes_to_it_and_is_never_a_message(terminal) -> None:
    approver, out, (question,) = await asked(terminal, request())
    assert approver.offer("what's the weather?\n") is True
    assert "Please answer y, n or a." in out.getvalue() and not question.done()
    approver.offer("a\n")
    assert (await question).always is True


async def test_a_question_whose_asker_went_away_makes_way_for_the_next(terminal) -> None:
    import asyncio

    approver, out, (first, second) = await asked(terminal, writes("touch one"), writes("touch two"))
    first.cancel()  # e.g. the background job was stopped
    await asyncio.gather(first, return_exceptions=True)
    assert "touch two" in out.getvalue() and approver.waiting == 1
    approver.offer("y\n")
    assert (await second).decision is Decision.APPROVED


async def test_a_question_covered_by_other_output_is_printed_again(terminal) -> None:
    approver, out, (question,) = await asked(terminal, request())
    assert approver.show_again() and out.getvalue().count("rm -rf build") == 1  # still on screen
    approver.written_over()
    out.write("[say] Here is a long reply.\n")
    assert approver.show_again() and out.getvalue().count("rm -rf build") == 2
    approver.offer("n\n")
    await question
