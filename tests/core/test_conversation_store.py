"""Her conversations on disk: finished turns survive a restart and a kill, a damaged file is set aside."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

from scripted_brain import user_texts

from companion.conversations import FILE_NAME, ConversationStore, Entry
from companion.conversations.recorder import TurnRecorder
from companion.events import (
    EventBus,
    Outcome,
    ReplyDone,
    Speak,
    SpeechKind,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    UserHeard,
)


def _record_turn(bus: EventBus, recorder: TurnRecorder, question: str, answer: str) -> None:
    bus.emit(UserHeard(question, spoken=False))
    bus.emit(ReplyDone(answer))
    recorder.remembered([{"role": "user", "content": question}, {"role": "assistant", "content": f"[happy] {answer}"}])
    bus.emit(TurnFinished(answer, "happy"))


def test_finished_turns_come_back_after_reopening_the_store_as_history_and_transcript(tmp_path):
    store = ConversationStore(tmp_path / FILE_NAME)
    conversation = store.new_conversation()
    bus = EventBus()
    recorder = TurnRecorder(store, conversation)
    bus.subscribe(recorder)
    _record_turn(bus, recorder, "my name is Sam", "Nice to meet you, Sam.")
    bus.emit(UserHeard("what time is it?"))
    bus.emit(Speak(SpeechKind.ANNOUNCE, "Let me check the clock.", "get_time"))
    bus.emit(ToolStarted("get_time", "call-1", {}))
    bus.emit(Speak(SpeechKind.COMPLETE, "Here's the time.", "get_time"))
    bus.emit(ToolFinished("get_time", "call-1", Outcome.OK, "It is 10:02."))
    bus.emit(ReplyDone("It's two past ten."))
    bus.emit(TurnFinished("It's two past ten.", "neutral"))
    store.close()

    again = ConversationStore(tmp_path / FILE_NAME)
    assert again.notice is None
    assert again.latest_conversation() == conversation
    assert again.recent_messages(conversation) == [
        {"role": "user", "content": "my name is Sam"},
        {"role": "assistant", "content": "[happy] Nice to meet you, Sam."},
        {"role": "user", "content": "what time is it?"},
        {"role": "assistant", "content": "It's two past ten."},
    ]
    lines = [(e.kind, e.text, e.tool, e.outcome) for turn in again.turns(conversation) for e in turn.entries]
    assert lines == [
        ("heard", "my name is Sam", "", ""),
        ("said", "Nice to meet you, Sam.", "", ""),
        ("heard", "what time is it?", "", ""),
        ("activity", "Let me check the clock.", "get_time", "ok"),  # one line, no narration bubbles
        ("said", "It's two past ten.", "", ""),
    ]
    assert [s.title for s in again.conversations()] == ["my name is Sam"]
    assert [s.id for s in again.conversations("ten")] == [conversation]
    assert again.conversations("penguins") == []


def test_the_recent_history_is_whole_turns_within_the_limit(tmp_path):
    store = ConversationStore(tmp_path / FILE_NAME)
    conversation = store.new_conversation()
    bus = EventBus()
    recorder = TurnRecorder(store, conversation)
    bus.subscribe(recorder)
    for n in range(10):
        _record_turn(bus, recorder, f"question {n}", f"answer {n}")
    recent = store.recent_messages(conversation, max_messages=5)
    assert [m["content"] for m in recent] == ["question 8", "[happy] answer 8", "question 9", "[happy] answer 9"]


def test_a_damaged_database_is_set_aside_with_a_notice_and_a_fresh_one_works(tmp_path):
    path = tmp_path / FILE_NAME
    path.write_bytes(b"this is not a database, it is a shopping list: eggs, milk" * 100)
    store = ConversationStore(path)
    assert store.notice is not None and "set it aside" in store.notice
    backups = list(tmp_path.glob("conversations.broken-*.sqlite3"))
    assert len(backups) == 1 and backups[0].read_bytes().startswith(b"this is not a database")
    conversation = store.new_conversation()
    turn = store.begin_turn(conversation, "hello again")
    store.finish_turn(turn, messages=[{"role": "user", "content": "hello again"}], entries=[Entry("heard", "hello again")])
    assert store.recent_messages(conversation) == [{"role": "user", "content": "hello again"}]


def test_a_process_killed_mid_turn_keeps_its_finished_turns_and_a_clean_half_turn(tmp_path, scripted_brain):
    scripted_brain.push(
        {"text": "[happy] Hi Sam! Good to meet you."},
        {"tool_calls": [{"name": "get_time", "arguments": {}}]},
        {"hang": True},  # the second turn's answer never comes: the process is killed waiting
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    command = [sys.executable, "-m", "companion.cli", "chat", "--brain-url", scripted_brain.url,
               "--config-dir", str(tmp_path / "config"), "--workspace", str(workspace)]
    chat = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        chat.stdin.write("I'm Sam\n")
        chat.stdin.flush()
        while "Hi Sam" not in chat.stdout.readline():
            pass
        chat.stdin.write("what time is it?\n")
        chat.stdin.flush()
        scripted_brain.wait_for_requests(3, timeout=30)  # the tool ran; she is waiting for words
    finally:
        os.kill(chat.pid, signal.SIGKILL)
        chat.wait(timeout=10)
    path = tmp_path / "config" / "data" / FILE_NAME
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = ConversationStore(path)
    assert store.notice is None
    conversation = store.latest_conversation()
    first, half = store.turns(conversation)
    assert first.complete and first.user_text == "I'm Sam"
    assert [e.text for e in first.entries] == ["I'm Sam", "Hi Sam! Good to meet you."]
    assert not half.complete and half.user_text == "what time is it?"
    assert store.recent_messages(conversation) == [
        {"role": "user", "content": "I'm Sam"},
        {"role": "assistant", "content": "[happy] Hi Sam! Good to meet you."},
        {"role": "user", "content": "what time is it?"},
    ]


def test_after_a_restart_she_answers_with_the_earlier_turns_in_her_history(tmp_path, scripted_brain):
    scripted_brain.push({"text": "[happy] Hi Sam!"}, {"text": "You're Sam."})
    workspace = tmp_path / "workspace"
    workspace.mkdir()

    def chat(text: str) -> None:
        subprocess.run([sys.executable, "-m", "companion.cli", "chat", "--brain-url", scripted_brain.url,
                        "--config-dir", str(tmp_path / "config"), "--workspace", str(workspace), "--once", text],
                       capture_output=True, text=True, timeout=60, check=True)

    chat("I'm Sam")
    chat("who am I?")
    messages = scripted_brain.bodies[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1:3] == [{"role": "user", "content": "I'm Sam"},
                             {"role": "assistant", "content": "[happy] Hi Sam!"}]
    assert user_texts(scripted_brain.bodies[-1]) == ["I'm Sam", "who am I?"]
