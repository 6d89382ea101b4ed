"""Every recorded llama.cpp exchange (tests/fixtures/llama-server), replayed byte for byte over
real HTTP through the scripted brain, ends the way it should."""

from __future__ import annotations

import json
import re

from brain_harness import make_config, registry_with, start_companion, tool
from scripted_brain import recorded, recorded_request, user_texts

from companion.brain.turn import LIMIT_LINE
from companion.events import ErrorOccurred, ReplyDelta, ReplyDone, Speak, ToolStarted
from companion.tools.context import Channel

MARKUP = re.compile(r"<\|?/?(im_start|im_end|tool_call|tool_response|eot_id|end_of_turn)|\|>")


def everything_she_showed_or_said(rec, companion) -> list[str]:
    """Every caption piece, reply, spoken line and history message of the conversation."""
    texts = [e.text for e in rec.of(ReplyDelta)] + [e.text for e in rec.of(ReplyDone)]
    texts += [e.text for e in rec.of(Speak)]
    texts += [str(m.get("content") or "") for m in companion.conversation.history]
    return texts


def assert_no_markup(rec, companion) -> None:
    for text in everything_she_showed_or_said(rec, companion):
        assert not MARKUP.search(text), text


async def test_a_plain_reply_without_an_emotion_tag_is_said_and_still_picks_a_face(tmp_path, scripted_brain):
    scripted_brain.push(recorded("plain-reply-no-emotion-tag"))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("hello, who are you?", Channel.VOICE)
    assert result.error is None and result.text.startswith("I'm Mira, a friendly and wonderful person.")
    assert result.text.endswith("I'm here to help!")
    assert result.emotion == "happy"  # no tag: "help!" and "friendly" pick a face, not neutral
    assert_no_markup(rec, companion)
    await companion.close()


async def test_three_identical_structured_calls_run_once_and_the_repeats_are_refused(tmp_path, scripted_brain):
    scripted_brain.push(recorded("structured-tool-call-cancel_work"), {"text": "[neutral] Nothing was running."})
    registry = registry_with(tool("cancel_work"))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry)
    result = await companion.ask("remember that my sister's name is Ana")
    assert [e.name for e in rec.of(ToolStarted)] == ["cancel_work"]
    results = [m["content"] for m in scripted_brain.bodies[1]["messages"] if m["role"] == "tool"]
    assert results[0] == "cancel_work ran with {}"
    assert all("already called cancel_work" in r for r in results[1:]) and len(results) == 3
    assert result.text == "Nothing was running."
    await companion.close()


async def test_two_structured_calls_in_one_reply_both_go_through_dispatch(tmp_path, scripted_brain):
    scripted_brain.push(recorded("structured-tool-calls-reminder-shell"), {"text": "[happy] Done."})
    reminder = tool("reminder", parameters={"type": "object", "properties": {"action": {"type": "string"}}})
    shell = tool("shell", parameters={"type": "object", "properties": {"command": {"type": "string"}},
                                      "required": ["command"]})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(reminder, shell))
    await companion.ask("hello")
    assert [e.name for e in rec.of(ToolStarted)] == ["reminder", "shell"]
    results = [m["content"] for m in scripted_brain.bodies[1]["messages"] if m["role"] == "tool"]
    assert results == ["reminder ran with {'action': 'add'}", "shell ran with {'command': 'ls -la'}"]
    await companion.close()


async def test_the_words_tool_call_tag_in_prose_are_said_without_the_tag_and_nothing_runs(tmp_path, scripted_brain):
    scripted_brain.push(recorded("tool-call-written-as-text"))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("shell")))
    result = await companion.ask("run the command ls", Channel.VOICE)
    assert result.text.startswith("The command is provided by the tag. It allows you to use the `ls` command")
    assert not rec.of(ToolStarted)
    assert_no_markup(rec, companion)
    await companion.close()


async def test_a_long_rambling_spoken_reply_stops_at_the_sentence_end_past_the_cap(tmp_path, scripted_brain):
    scripted_brain.push(recorded("reply-after-tool-results"))
    config = make_config(tmp_path, scripted_brain.url, brain={"max_tokens_spoken": 40})
    companion, rec = await start_companion(config, registry_with(tool("get_time")))
    result = await companion.ask("What time is it?", Channel.VOICE)
    assert scripted_brain.bodies[0]["max_tokens"] == 80  # the cap plus room to end the sentence
    assert result.cut == "limit"
    assert result.text.endswith(("designed to provide information and tools.", "operating systems."))
    assert len(result.text) < 300  # the recorded reply is 954 characters
    assert ("say", LIMIT_LINE) in rec.speech()
    assert companion.conversation.history[-1]["content"].endswith(LIMIT_LINE)
    await companion.close()


async def test_a_reply_cut_by_the_server_limit_is_marked_and_she_says_she_stopped(tmp_path, scripted_brain):
    scripted_brain.push(recorded("finish-length-at-300-tokens"), {"text": "[happy] The rest, then."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("what is my sister's name?")
    assert result.cut == "limit" and result.error is None
    assert ("say", LIMIT_LINE) in rec.speech()
    cut = companion.conversation.history[-1]["content"]
    assert cut.endswith(LIMIT_LINE) and "custom JSON-serialization format" in cut
    await companion.ask("go on")
    assert scripted_brain.bodies[1]["messages"][-2]["content"].endswith(LIMIT_LINE)
    await companion.close()


async def test_a_runaway_base_model_stops_at_its_first_template_token(tmp_path, scripted_brain):
    scripted_brain.push(recorded("runaway-with-chatml-tokens"))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("Reply with the single word OK.", Channel.VOICE)
    assert result.text == "Reply with the single word OK."
    assert [e.text for e in rec.of(ReplyDone)] == ["Reply with the single word OK."]
    assert_no_markup(rec, companion)
    await companion.close()


async def test_an_error_event_after_some_words_says_the_connection_dropped_never_the_raw_error(
    tmp_path, scripted_brain,
):
    scripted_brain.push(recorded("error-event-mid-stream"))
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("what time is it?")
    assert result.error is not None and result.error.code == "dropped"
    assert ("say", "Sorry, my connection dropped. Ask me again.") in rec.speech()
    assert not any("exception" in text or "grammar" in text for text in everything_she_showed_or_said(rec, companion))
    assert len(scripted_brain.bodies) == 1  # words were already out: no silent retry
    await companion.close()


async def test_an_error_event_before_any_words_is_retried_once_without_a_word(tmp_path, scripted_brain):
    raw = recorded("error-event-mid-stream")["raw"]
    error_only = "\n\n".join(e for e in raw.split("\n\n") if '"error"' in e or '"role"' in e) + "\n\n"
    scripted_brain.push({"raw": error_only}, {"text": "[happy] It's noon."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("what time is it?")
    assert result.error is None and result.text == "It's noon."
    assert not rec.of(ErrorOccurred) and len(scripted_brain.bodies) == 2
    await companion.close()


def _seed_runaway_history(companion) -> None:
    request = recorded_request("http-400-context-exceeded")
    companion.conversation.history.extend(request["messages"][1:3])  # the user turn and its 9 KB echo


async def test_a_context_exceeded_400_is_retried_once_without_the_old_turns_that_do_not_fit(tmp_path, scripted_brain):
    scripted_brain.push(recorded("http-400-context-exceeded"), {"text": "[happy] You're Tom and you like tea."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    _seed_runaway_history(companion)
    result = await companion.ask("what is my name and what do I like?")
    assert result.error is None and result.text == "You're Tom and you like tea."
    first, retry = scripted_brain.bodies
    assert len(json.dumps(retry)) < len(json.dumps(first)) / 3
    assert user_texts(retry) == ["what is my name and what do I like?"]
    assert not rec.of(ErrorOccurred)
    await companion.close()


async def test_a_turn_that_still_does_not_fit_says_so_and_is_not_kept(tmp_path, scripted_brain):
    too_big = recorded("http-400-context-exceeded")
    scripted_brain.push(too_big, too_big, {"text": "[happy] Hello again."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("x " * 3000)
    assert result.error is not None and result.error.code == "context"
    assert "more than my brain can hold" in result.error.sentence and "llama-server" not in result.error.sentence
    assert companion.conversation.history == []
    assert (await companion.ask("hello")).text == "Hello again."
    assert user_texts(scripted_brain.bodies[-1]) == ["hello"]
    await companion.close()
