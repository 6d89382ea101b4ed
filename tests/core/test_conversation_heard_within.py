"""Words heard within her turn that start no turn of their own (an "mm-hm" that left her talking)
are a transcript line of that turn, kept on disk; her history for the model is unchanged."""

from __future__ import annotations

from companion.conversations import FILE_NAME, ConversationStore
from companion.conversations.recorder import TurnRecorder
from companion.events import EventBus, ReplyDone, TurnFinished, UserHeard, turn_scope


def test_an_mm_hm_within_her_turn_is_a_line_of_that_turn_before_or_after_her_text_is_done(tmp_path):
    store = ConversationStore(tmp_path / FILE_NAME)
    conversation = store.new_conversation()
    bus = EventBus()
    recorder = TurnRecorder(store, conversation)
    bus.subscribe(recorder)
    with turn_scope(1):
        bus.emit(UserHeard("Tell me a story."))
        bus.emit(ReplyDone("Once upon a time."))
    bus.emit(UserHeard("Mm-hmm.", turn=1))  # while her reply is open
    with turn_scope(1):
        recorder.remembered([{"role": "user", "content": "Tell me a story."},
                             {"role": "assistant", "content": "Once upon a time."}])
        bus.emit(TurnFinished("Once upon a time.", "happy"))
    bus.emit(UserHeard("Right.", turn=1))  # her text was done, her voice was not
    with turn_scope(2):
        bus.emit(UserHeard("And then?"))
        bus.emit(ReplyDone("The end."))
        bus.emit(TurnFinished("The end.", "happy"))
    store.close()

    again = ConversationStore(tmp_path / FILE_NAME)
    assert [[(e.kind, e.text) for e in turn.entries] for turn in again.turns(conversation)] == [
        [("heard", "Tell me a story."), ("said", "Once upon a time."), ("heard", "Mm-hmm."), ("heard", "Right.")],
        [("heard", "And then?"), ("said", "The end.")],
    ]
    assert [m["content"] for m in again.recent_messages(conversation)] == [
        "Tell me a story.", "Once upon a time.", "And then?", "The end."]
