"""Writes the live conversation to the store, a finished turn at a time, from the core's events.

The recorder listens on the event bus: the user's words open a turn (saved at once), her
reply lines and one activity line per tool are collected, and the turn is completed in one
write when it finishes. Words heard within a turn already open (an "mm-hm" that left her
talking: the voice loop stamps it with her turn) are a line of that turn, not a new one. The exact messages the model got back as history come from the turn
loop (`remembered`); without them the turn's words are kept as plain user/assistant text.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

from companion import events as ev
from companion.conversations.store import ConversationStore, Entry
from companion.safety.consent.visible import visible

log = logging.getLogger(__name__)


class TurnRecorder:
    """One per running companion; `conversation_id` is the conversation being recorded."""

    def __init__(self, store: ConversationStore, conversation_id: int) -> None:
        self.store = store
        self.conversation_id = conversation_id
        self._turn_id: int | None = None
        self._last_turn_id: int | None = None
        self._turn = 0
        self._last_turn = 0
        """The core's numbers (events' `turn`) of the open and the last finished turn."""
        self._last_aside_id: int | None = None
        self._user_text = ""
        self._entries: list[Entry] = []
        self._messages: list[dict[str, Any]] | None = None
        self._announced: dict[str, str] = {}
        self._running: dict[str, int] = {}
        self._asked: dict[str, str] = {}
        """Open approval questions: request id -> the command asked about."""

    def switch_to(self, conversation_id: int) -> None:
        """Record into another conversation from now on (New conversation, reopening one)."""
        self._close_open_turn()
        self.conversation_id = conversation_id
        self._last_turn_id = None

    # --- what the turn loop says -------------------------------------------------------------
    def remembered(self, messages: list[dict[str, Any]]) -> None:
        """The messages one turn added to her history (user, assistant, tool), just before it ends."""
        self._messages = [dict(m) for m in messages]

    def remembered_aside(self, line: str) -> None:
        """The line she just said between turns joins her history (a background job's result)."""
        if self._last_aside_id is not None:
            self.store.replace_messages(self._last_aside_id, [{"role": "assistant", "content": line}])

    def replace_last_turn(self, messages: list[dict[str, Any]]) -> None:
        """After a barge-in her last turn keeps only what was heard: save that version."""
        if self._last_turn_id is not None:
            self.store.replace_messages(self._last_turn_id, [dict(m) for m in messages])

    # --- the bus ----------------------------------------------------------------------------
    def __call__(self, event: ev.Event) -> None:
        match event:
            case ev.UserHeard(text=text, spoken=spoken, turn=turn) if turn and turn in (self._turn, self._last_turn):
                self._heard_within(turn, Entry("heard", text, at=time.time(), spoken=spoken))
            case ev.UserHeard(text=text, spoken=spoken, turn=turn):
                self._close_open_turn()
                self._turn = turn
                self._user_text = text
                self._entries = [Entry("heard", text, at=time.time(), spoken=spoken)]
                self._messages = None
                self._turn_id = self.store.begin_turn(self.conversation_id, text, spoken=spoken,
                                                      at=self._entries[0].at)
            case ev.ReplyDone(text=text) if self._turn_id is not None and text.strip():
                self._entries.append(Entry("said", text.strip(), at=time.time()))
            case ev.Speak(kind=ev.SpeechKind.SAY, text=text):
                if self._turn_id is not None:
                    self._entries.append(Entry("said", text, at=time.time()))
                else:
                    # A reminder or a job's result, said between turns: shown again on reopening.
                    self._last_aside_id = self.store.add_aside(
                        self.conversation_id, Entry("said", text, at=time.time()))
            case ev.Speak(kind=ev.SpeechKind.ANNOUNCE, text=text, tool=tool) if tool:
                self._announced[tool] = text
            case ev.ToolStarted(name=name, call_id=call_id) if self._turn_id is not None:
                doing = self._announced.pop(name, "") or f"Using {name}"
                self._running[call_id] = len(self._entries)
                self._entries.append(Entry("activity", doing, at=time.time(), tool=name))
            case ev.ToolFinished(name=name, call_id=call_id, outcome=outcome, detail=detail) \
                    if self._turn_id is not None:
                self._tool_finished(name, call_id, str(outcome), detail)
            case ev.TurnFinished(emotion=emotion, interrupted=interrupted) if self._turn_id is not None:
                self._finish(emotion, interrupted)
            case ev.ApprovalNeeded(request_id=request_id, command=command):
                self._asked[request_id] = command
            case ev.ApprovalResolved(request_id=request_id, decision=decision) if request_id in self._asked:
                # How a question ended stays in the transcript after a restart, as it was shown.
                entry = Entry("notice", decision_line(self._asked.pop(request_id), decision), at=time.time())
                if self._turn_id is not None:
                    self._entries.append(entry)
                else:  # a background job's question
                    self.store.add_aside(self.conversation_id, entry)

    def _heard_within(self, turn: int, entry: Entry) -> None:
        """Words heard while her turn `turn` went on, which started no turn of their own."""
        if turn == self._turn and self._turn_id is not None:
            self._entries.append(entry)
        elif turn == self._last_turn and self._last_turn_id is not None:
            self.store.add_entry(self._last_turn_id, entry)  # her text was done, her voice was not

    def _tool_finished(self, name: str, call_id: str, outcome: str, detail: str) -> None:
        index = self._running.pop(call_id, None)
        if index is None:  # refused before it ran: no start event
            self._entries.append(Entry("activity", f"Using {name}", at=time.time(), tool=name,
                                       outcome=outcome, detail=detail))
            return
        started = self._entries[index]
        self._entries[index] = replace(started, outcome=outcome, detail=detail,
                                       elapsed_s=round(time.time() - started.at, 2))

    def _finish(self, emotion: str, interrupted: bool) -> None:
        messages = self._messages if self._messages is not None else self._plain_messages()
        entries = [e if e.kind != "activity" or e.outcome else replace(e, outcome="interrupted")
                   for e in self._entries]
        self.store.finish_turn(self._turn_id, messages=messages, entries=entries, emotion=emotion,
                               interrupted=interrupted)
        self._last_turn_id, self._turn_id = self._turn_id, None
        self._last_turn, self._turn = self._turn, 0
        self._running.clear()
        self._announced.clear()

    def _close_open_turn(self) -> None:
        """A turn that never finished (its task was dropped) is closed as interrupted."""
        if self._turn_id is not None:
            self._finish("", True)

    def _plain_messages(self) -> list[dict[str, Any]]:
        said = " ".join(e.text for e in self._entries if e.kind == "said")
        messages = [{"role": "user", "content": self._user_text}]
        if said:
            messages.append({"role": "assistant", "content": said})
        return messages


def decision_line(command: str, decision: str) -> str:
    """The transcript's record of how an approval question ended ("Declined `rm -r notes`")."""
    command = visible(command)
    if decision == "approved":
        return f"Approved `{command}`"
    if decision == "declined":
        return f"Declined `{command}`"
    if decision == "expired":
        return f"Nobody answered in time, so I didn't run `{command}`"
    return f"Nobody could answer, so I didn't run `{command}`"
