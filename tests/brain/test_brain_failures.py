"""When the brain fails she says one clear sentence, keeps going, and never shows a traceback."""

from __future__ import annotations

import socket

from brain_harness import make_config, registry_with, start_companion, tool
from scripted_brain import ScriptedBrain, user_texts

from companion.config import with_overrides
from companion.events import ErrorOccurred, ReplyDelta, Speak


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def ask_and_get_error(tmp_path, url: str, **sections):
    companion, rec = await start_companion(make_config(tmp_path, url, **sections), registry_with(tool("echo")))
    result = await companion.ask("hello")
    await companion.close()
    [error] = rec.of(ErrorOccurred)
    assert ("say", error.sentence) in rec.speech()
    assert result.error is not None and result.error.sentence == error.sentence
    return error, rec


async def test_a_brain_that_is_not_running_gets_a_sentence_for_a_local_server(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    error, _ = await ask_and_get_error(tmp_path, url)
    assert error.code == "unreachable"
    assert error.sentence == f"I can't reach my brain at {url}. Is the model server running at that address?"


async def test_a_rejected_api_key_says_to_check_the_key(tmp_path, scripted_brain):
    scripted_brain.push({"error": 401})
    error, _ = await ask_and_get_error(tmp_path, scripted_brain.url)
    assert error.code == "auth" and "refused my API key" in error.sentence


async def test_an_unknown_model_on_ollama_says_how_to_pull_it(tmp_path):
    show = {"model_info": {"qwen2.context_length": 32768}, "parameters": "", "capabilities": ["completion"]}
    with ScriptedBrain([{"error": "unknown_model"}], show=show) as brain:
        error, _ = await ask_and_get_error(tmp_path, brain.url)
    assert error.code == "unknown_model"
    assert "ollama pull scripted" in error.sentence


async def test_a_stream_cut_mid_reply_keeps_what_was_said_and_says_the_connection_dropped(tmp_path, scripted_brain):
    scripted_brain.push({"cut": True, "text": "[happy] The answer is forty and", "chunks": 6})
    error, rec = await ask_and_get_error(tmp_path, scripted_brain.url)
    assert error.code == "cut" and "dropped in the middle" in error.sentence
    assert "".join(e.text for e in rec.of(ReplyDelta)).startswith("The answer")


async def test_a_brain_that_answers_too_slowly_times_out_with_a_sentence(tmp_path, scripted_brain):
    scripted_brain.push({"hang": True})
    error, _ = await ask_and_get_error(tmp_path, scripted_brain.url, brain={"read_timeout_s": 0.3})
    assert error.code == "timeout" and "took longer than 0.3 seconds" in error.sentence


async def test_a_model_without_tool_support_is_retried_without_tools_and_she_says_so(tmp_path, scripted_brain):
    scripted_brain.push({"error": "no_tools"}, {"text": "[happy] Hi!"}, {"text": "Again."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("hello")
    assert result.error is None and result.text == "Hi!"
    [notice] = [text for kind, text in rec.speech() if kind == "say"]
    assert "can't use tools" in notice
    first, retry = scripted_brain.bodies
    assert "tools" in first and "tools" not in retry
    await companion.ask("and again")
    assert "tools" not in scripted_brain.bodies[2]  # remembered for this model
    await companion.close()


async def test_an_api_key_from_the_environment_is_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_API_KEY", "sekrit")
    with ScriptedBrain([{"text": "Welcome."}], api_key="sekrit") as brain:
        companion, rec = await start_companion(make_config(tmp_path, brain.url), registry_with(tool("echo")))
        result = await companion.ask("hi")
        await companion.close()
    assert result.text == "Welcome." and rec.of(ErrorOccurred) == []
    assert brain.requests[0]["headers"]["authorization"] == "Bearer sekrit"


async def test_after_a_failure_the_next_turn_works(tmp_path, scripted_brain):
    scripted_brain.push({"error": 500, "message": "overloaded"}, {"text": "[happy] Back again."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    first = await companion.ask("one")
    second = await companion.ask("two")
    assert first.error.code == "status" and "overloaded" in first.error.sentence
    assert second.error is None and second.text == "Back again."
    assert user_texts(scripted_brain.bodies[1]) == ["one", "two"]
    assert isinstance(rec.of(Speak)[0], Speak)
    await companion.close()


async def test_other_servers_ways_of_saying_no_tools_are_understood(tmp_path, scripted_brain):
    scripted_brain.push({"error": 500, "message": "tools param requires --jinja flag"}, {"text": "Plain."},
                        {"error": 400, "message": '"auto" tool choice requires --enable-auto-tool-choice'})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    assert (await companion.ask("hi")).text == "Plain."
    # Another model is tried with tools again.
    companion.apply_settings(with_overrides(companion.settings, brain={"model": "other"}))
    scripted_brain.push({"text": "Plain again."})
    assert (await companion.ask("hi")).text == "Plain again."
    assert [k for k, _ in rec.speech()] == ["say", "say"]
    await companion.close()


async def test_a_wrong_address_and_a_rate_limit_get_their_own_sentences(tmp_path, scripted_brain):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    error, _ = await ask_and_get_error(tmp_path / "a", scripted_brain.url + "/nope")
    assert error.code == "wrong_url" and "should end in /v1" in error.sentence
    scripted_brain.push({"error": 429, "message": "slow down"})
    error, _ = await ask_and_get_error(tmp_path / "b", scripted_brain.url)
    assert error.code == "rate_limit" and "too many requests" in error.sentence
