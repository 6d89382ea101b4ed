"""Calls written as text (Hermes, bare or fenced JSON, Llama 3, Mistral) run like structured ones
and are never shown or spoken; template tokens and invented tool results never reach her words."""

from __future__ import annotations

import pytest
from brain_harness import make_config, registry_with, start_companion, tool

from companion.brain.markup import MarkupFilter, parse_text_calls
from companion.brain.reply import ReplyStream
from companion.events import ReplyDelta, ReplyDone, ToolStarted
from companion.tools.context import Channel

TIME = {"type": "object", "properties": {"timezone": {"type": "string"}}, "additionalProperties": False}

WRITTEN = {
    "hermes": 'Let me check.\n<tool_call>\n{"name": "get_time", "arguments": {"timezone": "Tokyo"}}\n</tool_call>',
    "bare json": '{"name": "get_time", "arguments": {"timezone": "Tokyo"}}',
    "llama 3": 'Sure.\n{"name": "get_time", "parameters": {"timezone": "Tokyo"}}',
    "python tag": '<|python_tag|>{"name": "get_time", "parameters": {"timezone": "Tokyo"}}<|eom_id|>',
    "fenced": 'Let me check.\n```json\n{"name": "get_time", "arguments": {"timezone": "Tokyo"}}\n```',
    "mistral": '[TOOL_CALLS] [{"name": "get_time", "arguments": {"timezone": "Tokyo"}}]',
    "function tag": '<function=get_time>{"timezone": "Tokyo"}</function>',
    "openai shape": '{"type": "function", "function": {"name": "get_time", "arguments": "{\\"timezone\\": \\"Tokyo\\"}"}}',
}


def run(text: str, cuts: int = 7) -> tuple[str, list, str]:
    stream = ReplyStream(known_tools=["get_time"], cap_tokens=300)
    size = max(1, len(text) // cuts)
    shown = "".join(stream.feed(text[i:i + size])[0] for i in range(0, len(text), size)) + stream.finish()
    return shown, list(stream.text_calls("c")), stream.stop_reason


@pytest.mark.parametrize("form", sorted(WRITTEN))
@pytest.mark.parametrize("cuts", [1, 3, 11, 200])
def test_each_written_form_becomes_one_call_and_shows_none_of_its_markup(form, cuts):
    shown, calls, _ = run(WRITTEN[form], cuts)
    assert [(c.name, c.arguments.replace(" ", "")) for c in calls] == [("get_time", '{"timezone":"Tokyo"}')]
    assert "{" not in shown and "<" not in shown and "TOOL_CALLS" not in shown and "```" not in shown
    assert shown.strip() in ("", "Let me check.", "Sure.")


def test_json_that_names_no_offered_tool_is_ordinary_text():
    text = 'Here it is:\n```json\n{"name": "Ana", "age": 7}\n```\n{"name": "Ana", "arguments": {}}'
    shown, calls, _ = run(text)
    assert calls == [] and shown == text


def test_code_in_a_fence_streams_through_untouched():
    text = "Try this:\n```python\nprint({'a': 1})\n```\nDone."
    assert run(text) == (text, [], "")


def test_template_tokens_end_the_reply_and_nothing_after_them_is_shown():
    shown, calls, reason = run("The answer is four.<|im_end|>\n<|im_start|>user\nAnd five?<|im_end|>")
    assert (shown, calls, reason) == ("The answer is four.", [], "ended")
    shown, _, reason = run("Hi there.<end_of_turn>\n<start_of_turn>user\nmore")
    assert (shown, reason) == ("Hi there.", "ended")


def test_an_invented_tool_result_is_dropped_and_the_reply_goes_on():
    shown, _, _ = run('<tool_response>\n{"time": "12:00"}\n</tool_response>\nIt is noon.')
    assert shown.strip() == "It is noon."


def test_a_reply_repeating_the_same_sentence_is_stopped_before_the_third_time():
    stream = ReplyStream(cap_tokens=1000)
    line = "I am here to help you with anything at all. "
    pieces = [word + " " for word in (line * 6).split()]
    shown = "".join(stream.feed(piece)[0] for piece in pieces) + stream.finish()
    assert shown.count("I am here to help") == 2 and stream.stop_reason == "repeating"


def test_the_broken_json_in_a_tool_call_block_is_dropped_not_spoken():
    filt = MarkupFilter(known=frozenset({"get_time"}))
    shown = filt.feed('Okay. <tool_call>{"name": "get_time", "arguments": {</tool_call> Bye.') + filt.finish()
    assert shown == "Okay.  Bye." and filt.calls == []


def test_parse_accepts_a_list_and_rejects_objects_with_other_keys():
    assert [c.name for c in parse_text_calls('[{"name": "a"}, {"name": "b", "parameters": {}}]')] == ["a", "b"]
    assert parse_text_calls('{"name": "a", "email": "x"}') == []


async def test_a_hermes_call_written_as_text_runs_is_narrated_and_never_spoken(tmp_path, scripted_brain):
    scripted_brain.push({"text": WRITTEN["hermes"], "chunks": 9}, {"text": "[happy] It's nine in Tokyo."})
    get_time = tool("get_time", parameters=TIME, announce="Let me look at the clock.")
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(get_time))
    result = await companion.ask("what time is it in Tokyo?", Channel.VOICE)
    assert [e.name for e in rec.of(ToolStarted)] == ["get_time"]
    assert ("announce", "Let me look at the clock.") in rec.speech()
    assert result.text == "It's nine in Tokyo."
    words = "".join(e.text for e in rec.of(ReplyDelta)) + " ".join(e.text for e in rec.of(ReplyDone))
    assert "tool_call" not in words and "{" not in words
    # The history holds it as a structured call with its result, so the next request is valid.
    call, answer = companion.conversation.history[1], companion.conversation.history[2]
    assert call["tool_calls"][0]["function"]["name"] == "get_time" and "tool_call" not in (call["content"] or "")
    assert answer["role"] == "tool" and answer["tool_call_id"] == call["tool_calls"][0]["id"]
    await companion.close()


async def test_a_written_call_with_arguments_that_break_the_schema_is_refused_like_a_structured_one(
    tmp_path, scripted_brain,
):
    bad = '<tool_call>{"name": "get_time", "arguments": {"zone": 5}}</tool_call>'
    scripted_brain.push({"text": bad}, {"text": "[sad] I couldn't."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url),
                                           registry_with(tool("get_time", parameters=TIME)))
    await companion.ask("time?")
    assert not rec.of(ToolStarted)
    [refusal] = [m["content"] for m in scripted_brain.bodies[1]["messages"] if m["role"] == "tool"]
    assert "don't fit its parameters" in refusal
    await companion.close()


async def test_a_model_that_keeps_writing_calls_is_held_to_the_same_call_cap(tmp_path, scripted_brain):
    calls = [{"text": f'<tool_call>{{"name": "get_time", "arguments": {{"timezone": "Zone{i}"}}}}</tool_call>'}
             for i in range(12)]
    scripted_brain.push(*calls)
    scripted_brain.fallback = {"text": "[neutral] Enough."}
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url),
                                           registry_with(tool("get_time", parameters=TIME)))
    result = await companion.ask("loop")
    assert len(rec.of(ToolStarted)) == 8  # the companion cap, as for structured calls
    assert "tools" not in scripted_brain.bodies[-1]
    assert result.error is None
    await companion.close()


def test_repeated_lines_inside_a_code_block_are_not_taken_for_a_loop():
    code = "Here:\n```python\n" + "print('same line here')\n" * 4 + "```\nThat prints it four times."
    shown, _, reason = run(code, cuts=13)
    assert shown == code and reason == ""
