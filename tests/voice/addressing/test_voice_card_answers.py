"""An open card is an open call: while an approval card waits, a spoken answer is taken in
every listening mode, with or without her name, and nothing said to it withdraws it. The real
runtime and gate, a card opened by a typed question, real Whisper over files of speech."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from brain_harness import tool
from calling_support import CALLED, conversation, espeak, run_over, said, started, user_lines

from companion.config import VoiceSettings
from companion.events import ApprovalNeeded, Speak
from companion.safety.consent.approval import CardApprover
from companion.tools.context import Channel
from companion.tools.registry import Registry
from companion.voice.whose_words import CARD_WAITS


def touching_registry(command: str = "touch notes.txt") -> Registry:
    async def execute(args: dict, ctx) -> str:
        verdict = await ctx.services["gate"].review(command, channel=str(ctx.channel), timeout_s=60)
        return "Done." if verdict.allowed else ctx.fail(verdict.sentence)

    registry = Registry()
    registry.register(replace(tool("touch_notes", execute), risk="exec"))
    return registry


async def with_a_card_open(tmp_path, brain, command: str = "touch notes.txt"):
    """A typed question whose tool waits on a card for `command`; returns (companion, the typed
    turn, said lines)."""
    brain.push({"tool_calls": [{"name": "touch_notes", "arguments": {}}]}, {"text": "[happy] Done."})
    companion = await started(tmp_path, brain, registry=touching_registry(command))
    companion.gate.approver = CardApprover()
    card = asyncio.Event()
    spoken: list[str] = []

    def watch(event) -> None:
        if isinstance(event, ApprovalNeeded):
            card.set()
        elif isinstance(event, Speak):
            spoken.append(event.text)

    companion.bus.subscribe(watch)
    typed = asyncio.create_task(companion.ask("Please make me a notes file.", Channel.TEXT))
    await asyncio.wait_for(card.wait(), 30)
    return companion, typed, spoken


@pytest.mark.parametrize(("answer", "voice"), [
    ("Yes, run it.", CALLED), ("Mira, yes, run it.", CALLED), ("Yes.", replace(CALLED, name_wakes=False)),
    ("Yes, run it.", VoiceSettings(listening="always")),
])
async def test_a_spoken_answer_to_a_typed_questions_card_approves_it_in_every_mode(
        tmp_path, scripted_brain, piper_voice, hearing, answer, voice):
    companion, typed, _ = await with_a_card_open(tmp_path, scripted_brain)
    try:
        wav = conversation(tmp_path / "answer.wav", said(piper_voice, answer), 1.0)
        await run_over(companion, wav, piper_voice, hearing, voice)
        await asyncio.wait_for(typed, 30)
        decisions = [e["decision"] for e in companion.gate.audit.entries()]
    finally:
        await companion.close()

    assert decisions == ["approved"]
    assert user_lines(companion) == ["Please make me a notes file."]  # the answer was no new question
    assert len(scripted_brain.requests) == 2


async def test_her_name_and_a_question_while_a_card_waits_never_withdraw_it(
        tmp_path, scripted_brain, piper_voice, hearing):
    companion, typed, spoken = await with_a_card_open(tmp_path, scripted_brain)
    try:
        wav = conversation(tmp_path / "talk.wav", said(piper_voice, "Mira, what is the capital of France?"), 2.0,
                           espeak("Did you see the game last night?", "en+m3", tmp_path), 2.0)
        session = await run_over(companion, wav, piper_voice, hearing)
        still_open = companion.gate.approver.pending()
        wav = conversation(tmp_path / "yes.wav", said(piper_voice, "No."), 1.0)
        await run_over(companion, wav, piper_voice, hearing)
        await asyncio.wait_for(typed, 30)
        decisions = [e["decision"] for e in companion.gate.audit.entries()]
    finally:
        await companion.close()

    assert still_open, "the card was withdrawn by what was said to her"
    assert session.loop.heard == [] and CARD_WAITS in spoken
    assert decisions == ["declined"]
    assert len(scripted_brain.requests) == 2  # the question reached no brain while the card waited


async def test_called_while_a_destructive_card_waits_she_says_the_words_that_answer_it(
        tmp_path, scripted_brain, piper_voice, hearing):
    (tmp_path / "workspace" / "old").mkdir(parents=True, exist_ok=True)
    companion, typed, spoken = await with_a_card_open(tmp_path, scripted_brain, "rm -r old")
    try:
        wav = conversation(tmp_path / "talk.wav", said(piper_voice, "Mira, what is the capital of France?"), 2.0)
        await run_over(companion, wav, piper_voice, hearing)
        still_open = companion.gate.approver.pending()
        wav = conversation(tmp_path / "no.wav", said(piper_voice, "No."), 1.0)
        await run_over(companion, wav, piper_voice, hearing)
        await asyncio.wait_for(typed, 30)
    finally:
        await companion.close()

    assert still_open
    # A plain yes would approve nothing here, so she never tells the user to say one.
    assert CARD_WAITS not in spoken
    assert "The card is still waiting: say 'yes, run it' or no, or click it." in spoken
