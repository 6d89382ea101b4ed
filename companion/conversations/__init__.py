"""Her conversations kept on disk (SQLite), the recorder that writes them, and her memory notes."""

from companion.conversations.recorder import TurnRecorder
from companion.conversations.store import (
    FILE_NAME,
    ConversationStore,
    ConversationSummary,
    Entry,
    StoredTurn,
)

__all__ = ["FILE_NAME", "ConversationStore", "ConversationSummary", "Entry", "StoredTurn", "TurnRecorder"]
