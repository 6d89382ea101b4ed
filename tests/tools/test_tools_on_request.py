"""Her workspace tools (files, terminal, code) join a conversation's tool list only when she
asks for them or calls one: the list every turn starts with stays short and byte-identical."""

from __future__ import annotations

import json

from brain_harness import make_config, registry_with, start_companion, tool
from scripted_brain import ScriptedBrain

from companion.brain.budget import estimate_tokens, tools_tokens
from companion.brain.client import chat_tools
from companion.brain.tool_list import compact_tools
from companion.config import with_overrides
from companion.events import Outcome, Speak, ToolFinished
from companion.persona import build_system_prompt, parse_personality, shipped_default
from companion.tools import registry as tool_registry
from companion.tools.builtin import use_tools
from companion.tools.context import Channel
from companion.tools.families import ON_REQUEST_TOOLSETS
from companion.tools.registry import spec_from_module


def names(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def tools_of_each_family():
    return registry_with(tool("echo"), tool("peek", toolset="file"), tool("run", toolset="terminal"),
                         spec_from_module(use_tools))


async def test_asking_for_the_file_tools_lists_them_after_the_tools_at_hand_for_the_rest_of_the_run(
    tmp_path, scripted_brain: ScriptedBrain,
):
    scripted_brain.push({"tool_calls": [{"name": "use_tools", "arguments": {"family": "file"}}]},
                        {"text": "[happy] I have my file tools."}, {"text": "[happy] Still here."})
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url), tools_of_each_family())
    await companion.ask("look at my notes", Channel.TEXT)
    await companion.ask("and again", Channel.VOICE)
    first, second, third = scripted_brain.bodies
    assert names(first) == ["echo", "use_tools"]
    assert names(second) == ["echo", "use_tools", "peek"]
    assert second["tools"][:2] == first["tools"]  # the list only grew at its end: the cached prefix holds
    assert third["tools"] == second["tools"] and third["messages"][0] == first["messages"][0]
    assert "file tools are in your tool list" in second["messages"][-1]["content"]
    # Getting her tools out is not news: nothing is said for it.
    assert [e for e in recorder.of(Speak) if e.tool == "use_tools"] == []
    await companion.close()


async def test_a_workspace_tool_called_without_asking_runs_and_its_family_is_listed_from_then_on(
    tmp_path, scripted_brain: ScriptedBrain,
):
    scripted_brain.push({"tool_calls": [{"name": "run", "arguments": {}}]}, {"text": "[happy] Done."})
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url), tools_of_each_family())
    await companion.ask("run it", Channel.VOICE)
    first, second = scripted_brain.bodies
    assert "run" not in names(first) and names(second)[-1] == "run"
    assert [(e.name, e.outcome) for e in recorder.of(ToolFinished)] == [("run", Outcome.OK)]
    await companion.close()


async def test_a_family_switched_off_in_settings_cannot_be_asked_for(tmp_path, scripted_brain: ScriptedBrain):
    scripted_brain.push({"tool_calls": [{"name": "use_tools", "arguments": {"family": "terminal"}}]},
                        {"text": "[sad] I can't."})
    companion, recorder = await start_companion(make_config(tmp_path, scripted_brain.url), tools_of_each_family())
    companion.apply_settings(with_overrides(companion.settings, tools={"disabled_toolsets": ("terminal",)}))
    await companion.ask("run something", Channel.TEXT)
    _, second = scripted_brain.bodies
    assert "run" not in names(second)
    [finished] = recorder.of(ToolFinished)
    assert finished.outcome == Outcome.FAILED and "switched off the terminal tools" in finished.detail
    await companion.close()


def test_the_shipped_conversation_prompt_is_at_most_1200_tokens_and_its_workspace_tools_wait_to_be_asked_for():
    personality, _ = parse_personality(shipped_default().read_text(encoding="utf-8"))
    system = estimate_tokens(build_system_prompt(personality))
    registry = tool_registry.discover()
    at_hand = registry.schemas_for("companion")
    assert system + tools_tokens(chat_tools(compact_tools(at_hand))) <= 1200
    everything = registry.schemas_for("companion", opened=ON_REQUEST_TOOLSETS)
    later = [schema["name"] for schema in everything[len(at_hand):]]
    assert everything[:len(at_hand)] == at_hand
    assert {"read_file", "write_file", "shell", "execute_code"} <= set(later)
    assert json.dumps(at_hand) == json.dumps(registry.schemas_for("companion"))  # the same bytes every time
