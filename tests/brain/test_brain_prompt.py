"""What goes into each request: a reply cap, a prefix the server can cache (the same system
message and tool list whether she is typed to or spoken to), and a window that fits the context."""

from __future__ import annotations

import asyncio
import json

from brain_harness import make_config, registry_with, start_companion, tool
from scripted_brain import ScriptedBrain, user_texts

from companion.brain.budget import estimate_tokens, message_tokens, tools_tokens
from companion.brain.client import chat_tools
from companion.brain.server import ServerKind, probe_server
from companion.brain.tool_list import compact_tools
from companion.persona import build_system_prompt, parse_personality, shipped_default
from companion.runtime import Companion
from companion.tools import registry as tool_registry
from companion.tools.context import Channel

REMINDER = {"type": "object", "properties": {
    "action": {"type": "string", "enum": ["add", "list"], "description": "What to do with reminders."},
    "at": {"type": "string", "description": "A local time like '15:30'. Used with add."},
}, "required": ["action"], "additionalProperties": False}


def prefix(body: dict) -> str:
    """The request's cacheable prefix, as bytes would go out: system message and tools."""
    return json.dumps([body["messages"][0], body.get("tools")], sort_keys=True)


async def test_every_request_carries_a_reply_cap_shorter_when_spoken_and_sampling_settings(tmp_path, scripted_brain):
    scripted_brain.push({"text": "[happy] Hi."}, {"text": "[happy] Hello."})
    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    await companion.ask("hi", Channel.VOICE)
    await companion.ask("hello", Channel.TEXT)
    spoken, typed = scripted_brain.bodies
    assert spoken["max_tokens"] == 375 and typed["max_tokens"] == 1500  # 300 / 1200 plus room to end a sentence
    assert spoken["temperature"] == 0.7 and spoken["top_p"] == 0.9
    await companion.close()


async def test_a_typed_then_a_spoken_turn_send_the_same_system_message_and_tool_list(tmp_path, scripted_brain):
    scripted_brain.push({"text": "[happy] Typed answer."}, {"text": "[happy] Spoken answer."},
                        {"text": "[happy] Typed again."})
    reminder = tool("reminder", parameters=REMINDER)
    companion, _ = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(reminder, tool("echo")))
    await companion.ask("remind me at noon", Channel.TEXT)
    await companion.ask("and what else?", Channel.VOICE)
    await companion.ask("thanks", Channel.TEXT)
    first, second, third = scripted_brain.bodies
    assert prefix(first) == prefix(second) == prefix(third)
    # What differs comes after the prefix: the note on the newest user message only.
    assert "Typed reply" in first["messages"][-1]["content"]
    assert "Spoken reply" in second["messages"][-1]["content"]
    assert user_texts(second) == ["remind me at noon", "and what else?"]
    assert companion.conversation.history[0]["content"] == "remind me at noon"  # history keeps the plain words
    # The compact list keeps names, types, enums and required fields; prose is shortened.
    [offered] = [t["function"] for t in first["tools"] if t["function"]["name"] == "reminder"]
    assert offered["parameters"]["properties"]["action"] == {"type": "string", "enum": ["add", "list"]}
    assert offered["parameters"]["required"] == ["action"]
    await companion.close()


async def test_at_start_up_one_tiny_request_warms_the_same_prefix_the_first_turn_sends(tmp_path, scripted_brain):
    scripted_brain.push({"text": "[happy] Hi."})
    companion = Companion(make_config(tmp_path, scripted_brain.url), registry=registry_with(tool("echo")))
    await companion.start()
    [warm] = await asyncio.to_thread(scripted_brain.wait_for_warm_ups, 1)
    assert warm["max_tokens"] == 1
    await companion.ask("hi", Channel.VOICE)
    assert prefix(warm) == prefix(scripted_brain.bodies[0])
    await companion.close()


async def test_requests_fit_the_context_the_server_reports_while_the_history_keeps_everything(tmp_path):
    long_reply = "[neutral] " + " ".join(f"Sentence {i} is about nothing in particular." for i in range(40))
    props = {"default_generation_settings": {"n_ctx": 2048}, "chat_template_caps": {"supports_tools": True}}
    with ScriptedBrain([{"text": long_reply}] * 6, props=props) as brain:
        config = make_config(tmp_path, brain.url, brain={"max_tokens_typed": 300})
        companion, _ = await start_companion(config, registry_with(tool("echo")))
        for turn in range(6):
            await companion.ask(f"question {turn}")
        bodies = brain.bodies
    assert companion.model.server.kind == ServerKind.LLAMA_CPP and companion.model.server.context_tokens == 2048
    assert len(companion.conversation.history) == 12
    last = bodies[-1]
    estimated = sum(message_tokens(m) for m in last["messages"]) + tools_tokens(last["tools"])
    assert estimated + last["max_tokens"] <= 2048
    assert user_texts(last)[-1] == "question 5" and "question 0" not in user_texts(last)
    assert len(user_texts(last)) >= 2  # the most recent turns that fit are still there
    await companion.close()


async def test_the_context_size_comes_from_llama_cpp_props_or_ollamas_show():
    llama = {"default_generation_settings": {"n_ctx": 8192}, "chat_template_caps": {"supports_tools": False}}
    with ScriptedBrain(props=llama) as brain:
        info = await probe_server(brain.url, "m")
    assert (info.kind, info.context_tokens, info.tools) == (ServerKind.LLAMA_CPP, 8192, False)
    show = {"model_info": {"llama.context_length": 131072}, "parameters": "num_ctx 16384\nstop x",
            "capabilities": ["completion", "tools"]}
    with ScriptedBrain(show=show) as brain:
        info = await probe_server(brain.url, "m")
    assert (info.kind, info.context_tokens, info.tools) == (ServerKind.OLLAMA, 16384, True)
    with ScriptedBrain(show={**show, "parameters": ""}) as brain:
        assert (await probe_server(brain.url, "m")).context_tokens == 4096  # Ollama's own default
    hosted = await probe_server("https://api.example.com/v1", "m")
    assert hosted.kind == ServerKind.HOSTED and hosted.context_tokens == 0


def test_the_compact_prompt_is_far_smaller_than_the_whole_one():
    personality, _ = parse_personality(shipped_default().read_text(encoding="utf-8"))
    system = estimate_tokens(build_system_prompt(personality))
    schemas = tool_registry.discover().schemas_for("companion")
    whole, compact = tools_tokens(chat_tools(schemas)), tools_tokens(chat_tools(compact_tools(schemas)))
    assert compact < whole * 0.65
    assert system + compact < 1800
    assert [s["name"] for s in compact_tools(schemas)] == [s["name"] for s in schemas]
