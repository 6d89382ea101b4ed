"""Her conversations as the core keeps them: the one being recorded, carrying on another or
starting afresh, and each one's transcript. A broken file is set aside with a notice, and a
write that fails is said, never silent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from companion.conversations.recorder import TurnRecorder
from companion.conversations.store import FILE_NAME, ConversationStore, Entry
from companion.events import ErrorOccurred, EventBus

Messages = list[dict[str, Any]]


class KeptConversations:
    """Opens her conversations and carries on the latest; `recent()` is the history a
    conversation starts from (at most `keep` messages)."""

    def __init__(self, data_dir: Path, bus: EventBus, *, keep: int) -> None:
        self.keep = keep
        self.store = ConversationStore(
            data_dir / FILE_NAME,
            on_failure=lambda sentence: bus.emit(ErrorOccurred("history", "history_unsaved", sentence)))
        if self.store.notice:
            bus.emit(ErrorOccurred("history", "history_broken", self.store.notice))
        conversation_id = self.store.latest_conversation() or self.store.new_conversation()
        self.recorder = TurnRecorder(self.store, conversation_id)
        bus.subscribe(self.recorder)

    @property
    def conversation_id(self) -> int:
        """The conversation being recorded."""
        return self.recorder.conversation_id

    def recent(self) -> Messages:
        return self.store.recent_messages(self.conversation_id, self.keep)

    def start_new(self) -> int:
        conversation_id = self.store.new_conversation()
        self.recorder.switch_to(conversation_id)
        return conversation_id

    def switch_to(self, conversation_id: int) -> Messages:
        """Record into a past conversation from now on; returns its recent messages."""
        self.recorder.switch_to(conversation_id)
        return self.recent()

    def transcript(self, conversation_id: int | None = None) -> list[Entry]:
        """Every transcript line of a conversation (the current one by default), oldest first."""
        chosen = conversation_id if conversation_id is not None else self.conversation_id
        lines: list[Entry] = []
        for turn in self.store.turns(chosen):
            lines.extend(turn.entries)
            if not turn.complete and turn.user_text is not None:
                lines.append(Entry("notice", "(This turn was cut off when I closed.)", at=turn.started))
        return lines

    def heard_reply(self, history: Messages) -> None:
        """Her last reply in `history` was cut to what was heard: the stored turn follows."""
        self.recorder.replace_last_turn(_last_turn(history))

    def close(self) -> None:
        self.store.close()


def _last_turn(history: Messages) -> Messages:
    """The messages of the last user turn in a history (from its user message on)."""
    for index in range(len(history) - 1, -1, -1):
        if history[index]["role"] == "user":
            return history[index:]
    return []
