"""Spoken consent for a command that can destroy data: a plain "yes" (a TV, her own echo)
approves nothing and she says how; only the explicit phrase does. A "no" always declines."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from companion import events as ev
from companion.safety.consent.answers import answer_aloud, explicit_consent
from companion.safety.consent.approval import CardApprover
from companion.safety.gate import build_gate


@pytest.fixture
def gate_and_said(tmp_path: Path):
    bus = ev.EventBus()
    said: list[str] = []
    bus.subscribe(lambda e: said.append(e.text) if isinstance(e, ev.Speak) else None)
    (tmp_path / "ws" / "notes_copy").mkdir(parents=True)
    gate = build_gate(tmp_path / "ws", tmp_path / "approvals.toml", tmp_path / "data", bus=bus,
                      approver=CardApprover())
    return gate, said


async def _asked(gate, command: str) -> asyncio.Task:
    review = asyncio.ensure_future(gate.review(command, channel="voice"))
    while not gate.approver.pending():
        await asyncio.sleep(0)  # let the question reach the approver
    return review


@pytest.mark.parametrize("heard", ["yes", "Yes!", "yeah go ahead", "yes please", "okay", "sure, do it"])
async def test_a_plain_spoken_yes_never_approves_a_destructive_command_and_she_says_how(gate_and_said, heard) -> None:
    gate, said = gate_and_said
    review = await _asked(gate, "rm -r notes_copy")
    assert answer_aloud(gate, heard) is True  # taken as an answer: it starts no turn
    assert gate.approver.pending() and not review.done()  # but approves nothing
    assert said[-1] == "Click Yes to run it, or say 'yes, run it'."
    assert answer_aloud(gate, "yes, run it") is True
    verdict = await review
    assert verdict.allowed


async def test_no_always_declines_a_destructive_command(gate_and_said) -> None:
    gate, _ = gate_and_said
    review = await _asked(gate, "rm -r notes_copy")
    assert answer_aloud(gate, "no") is True
    assert not (await review).allowed


async def test_a_plain_yes_still_approves_a_command_that_cannot_destroy_data(gate_and_said) -> None:
    gate, said = gate_and_said
    review = await _asked(gate, "touch notes.txt")
    assert answer_aloud(gate, "yes") is True
    assert (await review).allowed and not said


@pytest.mark.parametrize(("text", "explicit"), [
    ("yes, run it", True), ("Yes run it.", True), ("yes, run it please", True),
    ("yes", False), ("run it", False), ("yes, run it and then delete everything", False),
])
def test_only_the_explicit_phrase_counts(text: str, explicit: bool) -> None:
    assert explicit_consent(text) is explicit
