"""Adapts the runtime's Companion to what the voice loop needs from a brain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from companion.tools.context import Channel

if TYPE_CHECKING:
    from companion.runtime import Companion
    from companion.turns import TurnOwner


class CompanionBrain:
    """Spoken turns go to `companion.ask(text, Channel.VOICE)`; interruptions go to its turn owner."""

    def __init__(self, companion: Companion) -> None:
        self.companion = companion

    @property
    def turns(self) -> TurnOwner:
        return self.companion.turns

    async def ask(self, text: str) -> None:
        await self.companion.ask(text, Channel.VOICE)

    def prepare(self, text: str, front):
        """Start the reply to `text` during the pause, held back (brain/prepared.py)."""
        return self.companion.prepare(text, front, Channel.VOICE)

    def fill(self, text: str) -> bool:
        """The user's words so far, while they still speak: sent ahead to fill a local server's
        prompt cache (brain/fill.py); nothing while a turn runs (its request is under way)."""
        conversation = self.companion.conversation
        if conversation is None or self.companion.busy:
            return False
        return conversation.fill(text, Channel.VOICE)

    async def ask_prepared(self, prepared) -> None:
        await self.companion.ask_prepared(prepared)

    def interrupt(self, reason: str) -> bool:
        return self.companion.interrupt(reason)

    def keep_heard(self, turn: int, heard: str) -> None:
        self.companion.keep_heard(turn, heard)

    def answer_aloud(self, text: str) -> bool:
        return self.companion.answer_aloud(text)

    def hold_notices(self, hold: bool) -> None:
        self.companion.hold_notices(hold)

    def card_open(self) -> bool:
        """An approval card waits for an answer (spoken words then go to it first)."""
        approver = getattr(self.companion.gate, "approver", None)
        pending = getattr(approver, "pending", None)
        return bool(pending()) if pending is not None else False

    def card_waiting_line(self) -> str:
        return self.companion.card_waiting_line()

    def names(self) -> tuple[str, ...]:
        """Her name and aliases from the personality's front matter (calling her by them wakes her)."""
        store = self.companion.personality
        if store is None:
            return ()
        return (store.current.name, *store.current.aliases)

    def thinking_line(self, count: int) -> str:
        """Her line when a spoken answer is slow: the personality's `waking` line while her
        brain is still starting, else its `thinking` line (`count`: lines said before)."""
        store = self.companion.personality
        if store is None:
            return ""
        return store.current.thinking.pick(self.companion.brain_waking(), count)

    def narration_lines(self) -> list[str]:
        """Every tool's resolved ANNOUNCE, HEARTBEAT, COMPLETE and FAIL lines, and her thinking
        lines (for the cache: each plays at once)."""
        store = self.companion.personality
        lines: list[str] = store.current.thinking.all() if store is not None else []
        for voice in self.companion.narration_lines().values():
            lines += [voice.announce, *voice.heartbeat, voice.complete, voice.fail]
        return [line for line in lines if line]
